import { useEffect, useRef, useState } from 'preact/hooks';

export interface Confirmation {
  title: string;
  body: string;
  /** The verb on the confirming button, e.g. "Purge 3 jobs". */
  verb: string;
  danger?: boolean;
  /**
   * Text to type before the confirming button works (a queue's name, before it is deleted): a
   * click alone, on the wrong queue's page, cannot remove it.
   */
  retype?: string;
  onConfirm(): void;
}

/** A modal confirmation (<dialog>, focus kept inside, Escape cancels). */
export function ConfirmDialog(props: { confirmation: Confirmation | undefined; onClose(): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const { confirmation, onClose } = props;
  const [typed, setTyped] = useState('');
  useEffect(() => {
    setTyped('');
    const element = dialog.current;
    if (element === null) return;
    if (confirmation !== undefined && !element.open) element.showModal();
    if (confirmation === undefined && element.open) element.close();
  }, [confirmation]);
  const retype = confirmation?.retype;
  const ready = retype === undefined || typed === retype;
  const confirm = () => {
    if (confirmation === undefined || !ready) return;
    confirmation.onConfirm();
    onClose();
  };
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
          {retype === undefined ? null : (
            <label class="retype">
              <span>
                Type <strong class="mono">{retype}</strong> to confirm
              </span>
              <input
                type="text"
                autocomplete="off"
                spellcheck={false}
                value={typed}
                // The field is what the dialog asks for first.
                autofocus
                onInput={(event) => setTyped(event.currentTarget.value)}
                onKeyDown={(event) => {
                  // Enter would submit the form with its first button, Cancel.
                  if (event.key !== 'Enter') return;
                  event.preventDefault();
                  confirm();
                }}
              />
            </label>
          )}
          <div class="dialog-buttons">
            <button type="submit" value="cancel" autofocus={retype === undefined}>
              Cancel
            </button>
            <button
              type="button"
              class={confirmation.danger ? 'danger' : 'primary'}
              disabled={!ready}
              onClick={confirm}
            >
              {confirmation.verb}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
