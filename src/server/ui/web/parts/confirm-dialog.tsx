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

/**
 * What the dialog says instead once what it asks about is gone while it is open (a queue
 * deleted elsewhere): nothing is left to confirm, and the operator may leave the page.
 */
export interface Withdrawn {
  title: string;
  body: string;
  /** The button that leaves the page, e.g. "Go to the overview". */
  leave: string;
  onLeave(): void;
}

/**
 * A modal confirmation (<dialog>, focus kept inside, Escape cancels). With `withdrawn`, the open
 * dialog says that instead, and offers to leave or to stay (Escape stays).
 */
export function ConfirmDialog(props: {
  confirmation: Confirmation | undefined;
  withdrawn?: Withdrawn | undefined;
  onClose(): void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const leave = useRef<HTMLButtonElement>(null);
  const { confirmation, withdrawn, onClose } = props;
  const [typed, setTyped] = useState('');
  useEffect(() => {
    setTyped('');
    const element = dialog.current;
    if (element === null) return;
    if (confirmation !== undefined && !element.open) element.showModal();
    if (confirmation === undefined && element.open) element.close();
  }, [confirmation]);
  const isWithdrawn = confirmation !== undefined && withdrawn !== undefined;
  useEffect(() => {
    // The field or button that had the focus is gone with the question: without this, the
    // focus would fall to the body, out of the dialog's reach from the keyboard.
    if (isWithdrawn) leave.current?.focus();
  }, [isWithdrawn]);
  const retype = confirmation?.retype;
  const ready = retype === undefined || typed === retype;
  const confirm = () => {
    if (confirmation === undefined || withdrawn !== undefined || !ready) return;
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
      {confirmation && withdrawn && (
        <form method="dialog">
          <h2 id="confirm-title">{withdrawn.title}</h2>
          <p id="confirm-body" role="alert">
            {withdrawn.body}
          </p>
          <div class="dialog-buttons">
            <button type="submit" value="cancel">
              Stay on this page
            </button>
            <button
              type="button"
              class="primary"
              ref={leave}
              onClick={() => {
                dialog.current?.close();
                withdrawn.onLeave();
              }}
            >
              {withdrawn.leave}
            </button>
          </div>
        </form>
      )}
      {confirmation && !withdrawn && (
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
