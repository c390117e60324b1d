/** The permission registry and the eight system roles (docs/api/identity.md#system-roles). */

const actions = {
  crud: ['read', 'write', 'delete'],
  read: ['read'],
  rw: ['read', 'write'],
} as const;

const registry: Record<string, readonly string[]> = {
  clients: actions.crud,
  environments: actions.crud,
  hosts: actions.crud,
  users: actions.crud,
  roles: actions.crud,
  teams: actions.crud,
  credentials: actions.crud,
  webhooks: actions.crud,
  compliance: actions.crud,
  alertsources: actions.crud,
  servicedesk: actions.crud,
  servicedeskconfig: actions.crud,
  metrics: actions.read,
  processes: actions.read,
  changes: actions.read,
  logs: actions.read,
  audit: actions.read,
  integrations: actions.rw,
  tags: actions.rw,
  search: actions.rw,
  alerts: actions.rw,
  healthcheck: actions.rw,
  chat: actions.rw,
  system: actions.rw,
  assets: actions.rw,
  runbooks: ['read', 'write', 'execute'],
  agents: ['read', 'update'],
  terminal: ['write'],
  terminal_sessions: ['read', 'write'],
  telegram_ops: ['write'],
  annotations: ['write'],
  notifications: actions.rw,
  // Invoicing (docs/api/invoicing.md#permission-model): read, prepare and edit, and move invoices through review.
  invoices: ['read', 'write', 'review'],
};

/** Every `resource:action` pair, in registry order. */
export const ALL_PERMISSIONS: readonly string[] = Object.entries(registry).flatMap(([resource, acts]) =>
  acts.map((a) => `${resource}:${a}`),
);
const known = new Set(ALL_PERMISSIONS);
export const isKnownPermission = (p: string): boolean => known.has(p);

const without = (excluded: string[]): string[] => ALL_PERMISSIONS.filter((p) => !excluded.includes(p));

const engineer = [
  'hosts:read',
  'hosts:write',
  'metrics:read',
  'integrations:read',
  'integrations:write',
  'tags:read',
  'tags:write',
  'search:read',
  'search:write',
  'chat:read',
];
const client = ['clients:read', 'hosts:read', 'assets:read', 'servicedesk:read', 'servicedesk:write'];

export interface SystemRole {
  id: string;
  name: string;
  description: string;
  permissions: readonly string[];
}

/** Fixed ids so every instance seeds the same rows and references survive re-seeding. */
export const SYSTEM_ROLES: readonly SystemRole[] = [
  {
    id: '00000000-0000-4000-8000-000000000001',
    name: 'Super Admin',
    description: 'All permissions',
    permissions: ALL_PERMISSIONS,
  },
  {
    id: '00000000-0000-4000-8000-000000000002',
    name: 'Admin',
    description: 'Everything except role management, team deletion and system settings',
    permissions: without(['roles:write', 'roles:delete', 'teams:delete', 'system:read', 'system:write']),
  },
  {
    id: '00000000-0000-4000-8000-000000000003',
    name: 'Team Lead',
    description: 'Engineer permissions plus read access to users, teams, roles and the audit log',
    permissions: [...engineer, 'users:read', 'teams:read', 'roles:read', 'audit:read'],
  },
  {
    id: '00000000-0000-4000-8000-000000000004',
    name: 'Engineer',
    description: 'Works on hosts, integrations, tags and search',
    permissions: engineer,
  },
  {
    id: '00000000-0000-4000-8000-000000000005',
    name: 'Executive',
    description: 'Reads clients, hosts, metrics, integrations and health checks',
    permissions: ['clients:read', 'hosts:read', 'metrics:read', 'integrations:read', 'healthcheck:read'],
  },
  {
    id: '00000000-0000-4000-8000-000000000006',
    name: 'Viewer',
    description: 'Reads hosts, metrics and health checks',
    permissions: ['hosts:read', 'metrics:read', 'healthcheck:read'],
  },
  {
    id: '00000000-0000-4000-8000-000000000007',
    name: 'Client',
    description: 'A customer: clients, hosts, assets and the service desk',
    permissions: client,
  },
  {
    id: '00000000-0000-4000-8000-000000000008',
    name: 'Client Engineer',
    description: 'Client permissions plus operational read access',
    permissions: [
      ...client,
      'metrics:read',
      'logs:read',
      'processes:read',
      'changes:read',
      'alerts:read',
      'healthcheck:read',
      'compliance:read',
    ],
  },
];

export const SYSTEM_ROLE_IDS = new Set(SYSTEM_ROLES.map((r) => r.id));
export const roleIdByName = (name: string): string => {
  const role = SYSTEM_ROLES.find((r) => r.name === name);
  if (!role) throw new Error(`no system role ${name}`);
  return role.id;
};
