/**
 * An e-mail address as it is stored and mailed: trimmed, with the domain lower-cased (DNS names are
 * case-insensitive) and the local part as given. Whether `Jane.Doe` and `jane.doe` are one mailbox is for the
 * receiving server to decide (RFC 5321 §2.4); look-ups compare `lower(email)`, and the unique index is on it too.
 */
export function storedEmail(address: string): string {
  const trimmed = address.trim();
  const at = trimmed.lastIndexOf('@');
  return at < 0 ? trimmed : trimmed.slice(0, at) + trimmed.slice(at).toLowerCase();
}
