import { formatCount } from '../format.js';
import { href } from '../router.js';
import { can, useSession } from '../session.js';

/** The queue's sections; Dead letters only for keys that may read them (admin). */
export function QueueTabs(props: {
  queue: string;
  current: 'queue' | 'deadLetters';
  dead?: number;
}) {
  const { me } = useSession();
  const { queue, current, dead } = props;
  return (
    <nav class="tabs" aria-label={`Sections of ${queue}`}>
      <a href={href.queue(queue)} aria-current={current === 'queue' ? 'page' : undefined}>
        Overview
      </a>
      {can(me, 'admin', queue) ? (
        <a
          href={href.deadLetters(queue)}
          aria-current={current === 'deadLetters' ? 'page' : undefined}
        >
          Dead letters
          {dead !== undefined && dead > 0 ? (
            <span class="badge dead">{formatCount(dead)}</span>
          ) : null}
        </a>
      ) : null}
    </nav>
  );
}
