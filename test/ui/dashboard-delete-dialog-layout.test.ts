/// <reference lib="dom" />
import type { BrowserContextOptions, Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { artifactPath, openQueuePage, signIn, skipBrowser, useAdminDashboard } from './browser.js';

/** The dialog that deletes a queue, with the longest name a queue may have, on a phone and in the dark. */

/** The longest queue name there is (80 characters), with no place to break it. */
const LONG_QUEUE = `q${'x'.repeat(79)}`;
const PHONE: BrowserContextOptions = {
  viewport: { width: 360, height: 740 },
  isMobile: true,
  hasTouch: true,
};

const dashboard = useAdminDashboard({ name: 'delete-dialog', queues: [LONG_QUEUE, 'orders'] });

/** Opens the Delete dialog of `queue` in a new page; answers the page and the dialog. */
async function openDialog(
  queue: string,
  context: BrowserContextOptions = {},
): Promise<{ page: Page; dialog: Locator }> {
  const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, { context });
  await openQueuePage(page, queue);
  await page.getByRole('button', { name: 'Delete queue', exact: true }).click();
  const dialog = page.getByRole('alertdialog');
  await dialog.getByRole('textbox').waitFor();
  return { page, dialog };
}

type Rgb = [number, number, number];

/** The WCAG contrast ratio of two colours. */
function contrast(a: Rgb, b: Rgb): number {
  const luminance = (rgb: Rgb) => {
    const [r, g, b] = rgb.map((channel) => {
      const c = channel / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    }) as Rgb;
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

/** The label and background colours of `button` as drawn (its `brightness()` filter applied). */
const drawnColours = (button: Locator) =>
  button.evaluate((element) => {
    const style = getComputedStyle(element);
    const brightness = Number(/brightness\(([\d.]+)\)/.exec(style.filter)?.[1] ?? '1');
    const rgb = (colour: string) =>
      (colour.match(/[\d.]+/g) ?? [])
        .slice(0, 3)
        .map((channel) => Math.min(255, Number(channel) * brightness));
    return { text: rgb(style.color), background: rgb(style.backgroundColor) };
  }) as Promise<{ text: Rgb; background: Rgb }>;

describe.skipIf(skipBrowser)('the dialog that deletes a queue (Chromium)', () => {
  it('keeps an 80-character queue name, and the field to type it in, within the dialog on a phone and a desktop', async () => {
    for (const [label, context] of [
      ['desktop', {}],
      ['phone', PHONE],
    ] as const) {
      const { page, dialog } = await openDialog(LONG_QUEUE, context);
      // Nothing reaches past the dialog: no sideways scrolling, nothing cut at its edge.
      await expect(
        dialog.evaluate((element) => element.scrollWidth - element.clientWidth),
      ).resolves.toBeLessThanOrEqual(0);
      const box = await dialog.boundingBox();
      const right = (box?.x ?? 0) + (box?.width ?? 0);
      for (const part of [dialog.locator('.retype strong'), dialog.getByRole('textbox')]) {
        const inner = await part.boundingBox();
        expect(inner).not.toBeNull();
        expect(inner?.x ?? 0).toBeGreaterThanOrEqual(box?.x ?? 0);
        expect((inner?.x ?? 0) + (inner?.width ?? 0)).toBeLessThanOrEqual(right);
      }
      await page.screenshot({ path: artifactPath(`delete-dialog-long-name-${label}.png`) });
      // The name typed whole still confirms.
      await dialog.getByRole('textbox').fill(LONG_QUEUE);
      await expect(
        dialog.getByRole('button', { name: 'Delete queue', exact: true }).isDisabled(),
      ).resolves.toBe(false);
      await page.context().close();
    }
  });

  it('draws the label of the Delete queue button readable (contrast at least 4.5:1) in light and dark, at rest and under the pointer', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const { page, dialog } = await openDialog('orders', { colorScheme });
      await dialog.getByRole('textbox').fill('orders');
      const button = dialog.getByRole('button', { name: 'Delete queue', exact: true });
      await page.mouse.move(0, 0);
      const resting = await drawnColours(button);
      expect(contrast(resting.text, resting.background), colorScheme).toBeGreaterThanOrEqual(4.5);
      await button.hover();
      const hovered = await drawnColours(button);
      expect(contrast(hovered.text, hovered.background), colorScheme).toBeGreaterThanOrEqual(4.5);
      await page.screenshot({ path: artifactPath(`delete-dialog-${colorScheme}.png`) });
      await page.context().close();
    }
  });
});
