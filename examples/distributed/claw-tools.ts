/**
 * The claw machine's tools, for a tool host process:
 *
 *   signalbox tools serve examples/distributed/claw-tools.ts --nats nats://127.0.0.1:4222
 *
 * The machine (its claw, its coin) lives in the tool host, not in the agent: the agent reaches it
 * over the bus as remote tools. `drop_claw` needs approval; the agent asks a reviewer on the bus
 * before calling it, so the call that reaches this host has already been approved.
 */
import { ClawMachine, createClawTools } from '../claw/agent.ts'

const coins = Number(process.env.CLAW_COINS ?? 1)
export const machine = new ClawMachine({ coins: Number.isInteger(coins) && coins >= 0 ? coins : 1 })
const { moveClaw, dropClaw } = createClawTools(machine)

export const tools = [moveClaw, dropClaw]
