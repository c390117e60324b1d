import { ConfigError, type Config } from '../../platform/config.ts';
import { SecretBox } from '../../platform/secret-box.ts';

/** The key sealing webhook secrets: SVC_EVENTS_ENCRYPTION_KEY, else one derived from SVC_MFA_ENCRYPTION_KEY. */
export function eventsSecretBox(config: Config): SecretBox {
  if (config.SVC_EVENTS_ENCRYPTION_KEY)
    return new SecretBox(config.SVC_EVENTS_ENCRYPTION_KEY, 'SVC_EVENTS_ENCRYPTION_KEY');
  if (config.SVC_MFA_ENCRYPTION_KEY)
    return SecretBox.derived(config.SVC_MFA_ENCRYPTION_KEY, 'events-webhook-secrets', 'SVC_MFA_ENCRYPTION_KEY');
  throw new ConfigError(
    'invalid configuration:\n  SVC_EVENTS_ENCRYPTION_KEY: is required by the events domain (or set SVC_MFA_ENCRYPTION_KEY to derive it)',
  );
}
