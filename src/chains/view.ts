/** What a chain's policy view holds: plain data a policy reads (the policy language's Value, without depending on it). */
export type View = { [k: string]: View } | View[] | string | bigint | boolean;
