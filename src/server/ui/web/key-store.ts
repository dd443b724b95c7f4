/** The API key, kept for this tab only (sessionStorage: no cookies, so no CSRF). */
const KEY = 'leaseq.apiKey';

export const keyStore = {
  get(): string | undefined {
    return sessionStorage.getItem(KEY) ?? undefined;
  },
  set(key: string): void {
    sessionStorage.setItem(KEY, key);
  },
  clear(): void {
    sessionStorage.removeItem(KEY);
  },
};
