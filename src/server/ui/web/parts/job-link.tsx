import { visibleId } from '../format.js';
import { href } from '../router.js';

/**
 * A job's id, linked to its page. The ids `.` and `..` cannot name a job in a URL path (a
 * client or proxy resolves them away, and the API refuses them: docs/http-api.md), so they are
 * shown without a link rather than as one that cannot open.
 */
export function JobLink({ queue, id }: { queue: string; id: string }) {
  if (id === '.' || id === '..') {
    return (
      <span class="unlinked job-id" title="a job with this id cannot be opened by its URL">
        {id}
      </span>
    );
  }
  // In a table a long id is cut (its whole in the title), so it never pushes the row's buttons
  // away; a bidirectional control in it is shown, not obeyed, and an id that would look like
  // another (a line break, a zero-width space, spaces at its ends) or like nothing is quoted.
  const shown = visibleId(id);
  return (
    <a href={href.job(queue, id)} class="job-id" title={shown}>
      {shown}
    </a>
  );
}
