import { ApiError } from '../api.js';
import { visible } from '../format.js';

/** An API error as a person reads it. */
export function ErrorNotice(props: { error: Error | undefined; what: string }) {
  const { error, what } = props;
  if (error === undefined) return null;
  const forbidden = error instanceof ApiError && error.status === 403;
  return (
    <p class={forbidden ? 'notice' : 'notice error'} role={forbidden ? 'status' : 'alert'}>
      {forbidden
        ? `This key may not read ${what}.`
        : `Could not read ${what}: ${visible(error.message)}`}
    </p>
  );
}

export function Loading(props: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {props.what}…
    </p>
  );
}
