/**
 * SQL that both engines run word for word (it holds no parameters, and SQLite and PostgreSQL read
 * it alike).
 */

/**
 * For a webhook_deliveries row: whether it is an e-mail (src/mail.ts queues them with a `mailto:`
 * address; webhooks.ts sends them in a lane of their own).
 */
export const MAIL_ROW = `substr(url, 1, 7) = 'mailto:'`;

/**
 * For a send_transactions row `s`: whether it is its sender's turn. An INITIALIZED row waits while
 * an INITIALIZED row of the same sender on the same network holds a lower nonce, so each sender's
 * transactions reach the node one at a time and in nonce order, whichever node or process sends
 * them (a node can take a transaction whose nonce is ahead of the ones it has seen as a gap, and
 * some drop it or stall on it). Rows without a nonce (Solana) never wait.
 */
export const SENDER_TURN = `NOT (s.status = 'INITIALIZED' AND EXISTS (SELECT 1 FROM send_transactions e
  WHERE e.caip2 = s.caip2 AND e.from_address = s.from_address AND e.status = 'INITIALIZED' AND e.nonce < s.nonce))`;
