/** `signalbox nats permissions`: the printed block is a working nats-server configuration. */
import { connect, errors } from '@nats-io/transport-node'
import { afterAll, describe, expect, it } from 'vitest'
import { cleanupAll, runCli } from '../../../../test/cli/support.ts'
import { type ConfigServer, startConfigServer } from '../../../../test/support/nats-config-server.ts'

const servers: ConfigServer[] = []
afterAll(async () => {
  await cleanupAll()
  for (const server of servers) await server.dispose()
})

describe('signalbox nats permissions', () => {
  it('prints a block nats-server accepts; the agent user logs in and cannot publish decisions', async () => {
    const printed = await runCli(['nats', 'permissions', '--role', 'agent', '--agent', 'claw', '--prefix', 'p.v1'])
    expect(printed.code).toBe(0)
    expect(printed.stdout).toContain('user: "claw", password: $CLAW_PASSWORD')
    expect(printed.stdout).toContain('"p.v1.approvals.claw"')
    expect(printed.stdout).toContain('allow_responses: true')
    // nats-server reads the password variable from its environment.
    process.env.CLAW_PASSWORD = 'pw-from-env'
    const server = await startConfigServer(() => printed.stdout)
    servers.push(server)
    const nc = await connect({ servers: server.url, user: 'claw', pass: 'pw-from-env', inboxPrefix: '_INBOX.claw' })
    try {
      const allowed = await nc.request('$JS.API.INFO', '', { timeout: 5_000 })
      expect(allowed.json<{ type: string }>().type).toBe('io.nats.jetstream.api.v1.account_info_response')
      const denied = await nc.request('p.v1.approvals.claw.decisions', '{}', { timeout: 5_000 }).catch((e: unknown) => e)
      expect((denied as Error).cause).toBeInstanceOf(errors.PermissionViolationError)
    } finally {
      await nc.close()
    }
  })

  it('several roles, a host of several agents, a parent with its children; JSON as data', async () => {
    const person = await runCli(['nats', 'permissions', '--role', 'reviewer', '--role', 'answerer', '--name', 'tina', '--json'])
    expect(person.code).toBe(0)
    const both = JSON.parse(person.stdout) as { role: string; consumers: string[] }
    expect(both.role).toBe('reviewer+answerer')
    expect(both.consumers).toEqual(expect.arrayContaining(['reviewers', 'tina_decided', 'tina_questions', 'tina_answered']))
    const host = await runCli(['nats', 'permissions', '--role', 'agent', '--agent', 'flights,hotels', '--name', 'bookings'])
    expect(host.stdout).toContain('consumers bookings_flights_decisions')
    expect(host.stdout).toContain('"signalbox.v1.agents.hotels.alive"')
    const parent = await runCli(['nats', 'permissions', '--role', 'agent', '--agent', 'travel', '--child', 'flights'])
    expect(parent.stdout).toContain('"signalbox.v1.agents.flights.run"')
    expect(parent.stdout).toContain('travel_results')
    const unnamed = await runCli(['nats', 'permissions', '--role', 'agent', '--agent', 'flights,hotels'])
    expect(unnamed.code).toBe(2)
    expect(unnamed.stderr).toContain('needs --name')
    const unknown = await runCli(['nats', 'permissions', '--role', 'reviewer,pilot'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('--role must be one of')
  })

  it('the tool-host role is granted the ledger of used approvals: the prefix’s bucket, or --ledger-bucket', async () => {
    const byDefault = await runCli(['nats', 'permissions', '--role', 'tool-host', '--prefix', 'p.v1'])
    expect(byDefault.code).toBe(0)
    expect(byDefault.stdout).toContain('"$KV.signalbox_used_approvals_p_v1.>"')
    const named = await runCli(['nats', 'permissions', '--role', 'tool-host', '--ledger-bucket', 'claw_ledger'])
    expect(named.stdout).toContain('"$KV.claw_ledger.>"')
    expect(named.stdout).toContain('"$JS.API.STREAM.CREATE.KV_claw_ledger"')
    expect(named.stdout).not.toContain('signalbox_used_approvals')
  })

  it('the agent role without --agent is a usage error', async () => {
    const result = await runCli(['nats', 'permissions', '--role', 'agent'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('the agent role needs --agent <id>')
  })
})
