import { useEffect, useRef } from 'preact/hooks';

export interface Confirmation {
  title: string;
  body: string;
  /** The verb on the confirming button, e.g. "Purge 3 jobs". */
  verb: string;
  danger?: boolean;
  onConfirm(): void;
}

/** A modal confirmation (<dialog>, focus kept inside, Escape cancels). */
export function ConfirmDialog(props: { confirmation: Confirmation | undefined; onClose(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const { confirmation, onClose } = props;
  useEffect(() => {
    const element = dialog.current;
    if (element === null) return;
    if (confirmation !== undefined && !element.open) element.showModal();
    if (confirmation === undefined && element.open) element.close();
  }, [confirmation]);
  return (
    <dialog
      ref={dialog}
      role="alertdialog"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onClose={onClose}
    >
      {confirmation && (
        <form method="dialog">
          <h2 id="confirm-title">{confirmation.title}</h2>
          <p id="confirm-body">{confirmation.body}</p>
          <div class="dialog-buttons">
            <button type="submit" value="cancel" autofocus>
              Cancel
            </button>
            <button
              type="button"
              class={confirmation.danger ? 'danger' : 'primary'}
              onClick={() => {
                confirmation.onConfirm();
                onClose();
              }}
            >
              {confirmation.verb}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
