import { describe, expect, it } from 'vitest';
import { chartLink, formatRatio, formatRatioAgainst } from '../../bench/lib/report.js';

describe('the benchmark report prints a ratio that agrees with its PASS or FAIL', () => {
  it('a ratio that misses its bound by less than the rounding is not printed as the bound', () => {
    expect(formatRatio(1.996)).toBe('2.00×');
    expect(formatRatioAgainst(1.996, 2)).toBe('1.996×');
    expect(formatRatioAgainst(1.9999, 2)).toBe('1.9999×');
    expect(formatRatioAgainst(2.004, 2)).toBe('2.004×');
    expect(formatRatioAgainst(1.5004, 1.5)).toBe('1.5004×');
  });

  it('elsewhere it is the usual two decimals (one from 10×), and the bound itself is the bound', () => {
    expect(formatRatioAgainst(1.989, 2)).toBe('1.99×');
    expect(formatRatioAgainst(2, 2)).toBe('2.00×');
    expect(formatRatioAgainst(13.6, 2)).toBe('13.6×');
    expect(formatRatioAgainst(0.82, undefined)).toBe('0.82×');
    expect(formatRatioAgainst(Number.NaN, 1)).toBe('–');
  });
});

describe('the benchmark report links its chart', () => {
  it('by the name --out gave it, beside the markdown', () => {
    expect(chartLink('/work/bench/results/latest')).toBe('![W1 to W4 per system](latest.svg)');
    expect(chartLink('/tmp/run 2/profile')).toBe('![W1 to W4 per system](profile.svg)');
    expect(chartLink('/tmp/my run')).toBe('![W1 to W4 per system](my%20run.svg)');
  });
});
