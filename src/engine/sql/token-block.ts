/**
 * Tokens reserved per synced commit where reservations commit without a sync (R21). A restart
 * after a crash skips at most this many tokens (a gap, never a repeat); a larger block pays the
 * synced commit more rarely.
 */
export const TOKEN_BLOCK = 1000;
