import { type Command, EXIT, UsageError } from '../cli.ts'

const ROLE_NAMES = ['agent', 'reviewer', 'answerer', 'steering', 'tool-host', 'observer', 'console'] as const

export const natsPermissions: Command = {
  name: 'nats permissions',
  summary: "print the nats-server authorization block for one role's user",
  usage:
    'nats permissions --role <role> [--prefix <prefix>] [--agent <id>] [--tool <name>] [--name <name>] [--user <user> | --nkey <key>]',
  description: [
    'Prints the `authorization { users = [...] }` block that grants a role exactly what it needs',
    '(docs/security.md lists the same subjects, with why): its subjects under --prefix, the',
    'JetStream API for its own stream and named consumers, acks, and its own inbox _INBOX.<name>.',
    'The password is a config variable ($<USER>_PASSWORD), never written to the file.',
    'Merge the users of several roles into one block. With --json, the permissions as data.',
  ].join('\n'),
  options: {
    role: { type: 'string', valueName: '<role>', description: 'the role of the user', choices: ROLE_NAMES },
    agent: {
      type: 'string',
      valueName: '<id>',
      description: 'the agent (required for --role agent)',
      default: 'every agent (*)',
    },
    tool: { type: 'string', valueName: '<name>', description: 'tools a tool host serves', default: 'every tool (*)' },
    name: {
      type: 'string',
      valueName: '<name>',
      description: 'inbox and consumer name of the user',
      default: 'the agent id, else the role',
    },
    user: { type: 'string', valueName: '<user>', description: 'user name in the block', default: 'the name' },
    nkey: { type: 'string', valueName: '<key>', description: 'log in with this public nkey instead of a password' },
  },
  bus: 'none',
  maxArgs: 0,
  examples: [
    ['signalbox nats permissions --role agent --agent claw', 'the claw agent user'],
    ['signalbox nats permissions --role reviewer --prefix prod.v1 --nkey UA...', 'a reviewer logging in with an nkey'],
  ],
  async run(context) {
    const role = context.values.role
    if (typeof role !== 'string') throw new UsageError('--role is required', context.command)
    const text = (name: string) => (typeof context.values[name] === 'string' ? (context.values[name] as string) : undefined)
    const { rolePermissions, userEntry } = await import('@signalbox/actors/trust')
    const scope = {
      prefix: context.global.prefix,
      ...(text('agent') ? { agent: text('agent') } : {}),
      ...(text('tool') ? { tool: text('tool') } : {}),
      ...(text('name') ? { name: text('name') } : {}),
    }
    let permissions: ReturnType<typeof rolePermissions>
    try {
      permissions = rolePermissions(role as (typeof ROLE_NAMES)[number], scope)
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
