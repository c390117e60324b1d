import { describe, expect, it } from 'vitest';
import { auditActionsOf, auditTitle } from '../../actors/events/notifications/audit-actions.ts';

describe('auditActionsOf', () => {
  it('derives a super admin grant from a user update that turned the flag on, and only then', () => {
    expect(
      auditActionsOf({ action: 'user.updated', details: { changes: { is_super_admin: { from: false, to: true } } } }),
    ).toEqual(['user.updated', 'user.super_admin_granted']);
    expect(
      auditActionsOf({ action: 'user.updated', details: { changes: { is_super_admin: { from: true, to: false } } } }),
    ).toEqual(['user.updated']);
    expect(
      auditActionsOf({ action: 'user.updated', details: { changes: { display_name: { from: 'a', to: 'b' } } } }),
    ).toEqual(['user.updated']);
    expect(auditActionsOf({ action: 'user.updated', details: { changes: null } })).toEqual(['user.updated']);
    expect(auditActionsOf({ action: 'user.created', details: { is_super_admin: { to: true } } })).toEqual([
      'user.created',
    ]);
  });

  it('names a service account’s creation as the creation of its key too', () => {
    expect(auditActionsOf({ action: 'service_account.created', details: {} })).toEqual([
      'service_account.created',
      'service_account.key_created',
    ]);
  });

  it('titles an entry by its actor and resource', () => {
    expect(
      auditTitle(
        { action: 'x.y', actor_email: 'ann@example.com', actor_type: 'user', resource_type: 'user', resource_id: 'u1' },
        'user.super_admin_granted',
      ),
    ).toBe('Audit: user.super_admin_granted by ann@example.com (user u1)');
    expect(
      auditTitle(
        { action: 'x.y', actor_email: null, actor_type: 'service_account', resource_type: 'role', resource_id: null },
        'x.y',
      ),
    ).toBe('Audit: x.y by a service account (role)');
  });
});
