import Fastify from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_BY_CODE } from '../../src/server/errors.js';
import { registerDashboard } from '../../src/server/ui/dashboard.js';

const app = Fastify();

beforeAll(async () => {
  // As a server run from the sources without the build: no bundle to serve.
  registerDashboard(app, pino({ level: 'silent' }), null);
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

describe('a server without the dashboard bundle', () => {
  it('answers /ui/ with UNSUPPORTED at the status that code has on every route, 501', async () => {
    const answer = await app.inject({ method: 'GET', url: '/ui/' });
    expect(answer.statusCode).toBe(STATUS_BY_CODE.UNSUPPORTED);
    expect(answer.statusCode).toBe(501);
    expect(answer.json()).toEqual({
      error: { code: 'UNSUPPORTED', message: expect.stringContaining('npm run build') },
    });
  });
});
