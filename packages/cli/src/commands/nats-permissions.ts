import { type Command, EXIT, UsageError } from '../cli.ts'

const ROLE_NAMES = ['agent', 'reviewer', 'answerer', 'steering', 'tool-host', 'observer', 'console'] as const

export const natsPermissions: Command = {
  name: 'nats permissions',
  summary: "print the nats-server authorization block for one role's user",
  usage:
    'nats permissions --role <role[,role]> [--prefix <prefix>] [--agent <id>] [--child <id>] [--tool <name>] [--name <name>] [--user <user> | --nkey <key>]',
  description: [
    'Prints the `authorization { users = [...] }` block that grants a role exactly what it needs',
    '(docs/security.md lists the same subjects, with why): its subjects under --prefix, the',
    'JetStream API for its own stream and named consumers, acks, its KV buckets, and its own inbox',
    '_INBOX.<name>. A user with several roles (a person who reviews and answers: --role',
    'reviewer,answerer) gets all of them. A parent agent lists the agents it delegates to with',
    '--child. The password is a config variable ($<USER>_PASSWORD), never written to the file.',
    'Merge the users of several roles into one block. With --json, the permissions as data.',
  ].join('\n'),
  options: {
    role: { type: 'string', valueName: '<role>', description: 'the role of the user', choices: ROLE_NAMES, multiple: true },
    agent: {
      type: 'string',
      valueName: '<id>',
      description: 'the agent (required for --role agent; several for a host that serves them on one connection, with --name)',
      default: 'every agent (*)',
      multiple: true,
    },
    child: {
      type: 'string',
      valueName: '<id>',
      description: 'agent role: an agent it delegates to (starts and cancels its runs); * for any',
      default: 'none',
      multiple: true,
    },
    tool: { type: 'string', valueName: '<name>', description: 'tools a tool host serves', default: 'every tool (*)' },
    name: {
      type: 'string',
      valueName: '<name>',
      description: 'inbox and consumer name of the user',
      default: 'the agent id, else the role',
    },
    group: {
      type: 'string',
      valueName: '<group>',
      description: 'shared consumer group of reviewers or answerers',
      default: 'reviewers / answerers (-<agent> with --agent)',
    },
    'run-bucket': {
      type: 'string',
      valueName: '<name>',
      description: "the run store's KV bucket (signalbox host --run-bucket)",
      default: 'signalbox_runs',
    },
    'ledger-bucket': {
      type: 'string',
      valueName: '<name>',
      description: 'the KV bucket where enforcing tool hosts remember used approvals (tools serve --ledger-bucket)',
      default: 'signalbox_used_approvals (_<prefix> for another prefix)',
    },
    user: { type: 'string', valueName: '<user>', description: 'user name in the block', default: 'the name' },
    nkey: { type: 'string', valueName: '<key>', description: 'log in with this public nkey instead of a password' },
  },
  bus: 'none',
  maxArgs: 0,
  examples: [
    ['signalbox nats permissions --role agent --agent claw', 'the claw agent user'],
    ['signalbox nats permissions --role agent --agent travel --child flights,hotels', 'a parent agent that delegates'],
    ['signalbox nats permissions --role agent --agent flights,hotels --name bookings', 'a host serving two agents'],
    ['signalbox nats permissions --role reviewer,answerer --prefix prod.v1 --nkey UA...', 'a person reviewing with an nkey'],
  ],
  async run(context) {
    const roles = typeof context.values.role === 'string' ? context.values.role.split(',').map((r) => r.trim()) : []
    if (roles.length === 0) throw new UsageError('--role is required', context.command)
    const text = (name: string) => (typeof context.values[name] === 'string' ? (context.values[name] as string) : undefined)
    const { rolePermissions, userEntry } = await import('@signalbox/actors/trust')
    const children = text('child')
      ?.split(',')
      .map((c) => c.trim())
      .filter(Boolean)
    const agents = text('agent')
      ?.split(',')
      .map((a) => a.trim())
      .filter(Boolean)
    const scope = {
      prefix: context.global.prefix,
      ...(agents ? { agent: agents.length === 1 ? (agents[0] as string) : agents } : {}),
      ...(children ? { children } : {}),
      ...(text('tool') ? { tool: text('tool') } : {}),
      ...(text('name') ? { name: text('name') } : {}),
      ...(text('group') ? { group: text('group') } : {}),
      ...(text('run-bucket') ? { runBucket: text('run-bucket') } : {}),
      ...(text('ledger-bucket') ? { usedApprovalsBucket: text('ledger-bucket') } : {}),
    }
    let permissions: ReturnType<typeof rolePermissions>
    try {
      permissions = rolePermissions(roles as (typeof ROLE_NAMES)[number][], scope)
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error), context.command)
    }
    if (context.global.json) {
      context.out(JSON.stringify(permissions))
      return EXIT.ok
    }
    const nkey = text('nkey')
    const user = text('user') ?? permissions.name
    const login = nkey ? { nkey } : { user, password: `$${user.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_PASSWORD` }
    context.out(['authorization {', '  users = [', userEntry(login, permissions), '  ]', '}'].join('\n'))
    return EXIT.ok
  },
}
