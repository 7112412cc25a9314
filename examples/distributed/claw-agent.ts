/**
 * The claw agent as a module for `signalbox run`:
 *
 *   signalbox run examples/distributed/claw-agent.ts --scripted --nats nats://127.0.0.1:4222
 *
 * Its tools are elsewhere: `move_claw` and `drop_claw` on a tool host (`signalbox tools serve
 * examples/distributed/claw-tools.ts`), found by name on the bus; `ask_kid` sends the question
 * to whoever answers on the bus (`signalbox review`), and so do approvals of `drop_claw`.
 * `--scripted` plays a small rule-based model offline, which reacts to whatever the reviewer
 * answers, approves or denies; without it, pass --model / --base-url for a real one.
 */
import { defineAgentModule } from '@signalbox/cli'
import { CLAW_INSTRUCTIONS } from '../claw/agent.ts'
import { INTERACTIVE_MODEL, INTERACTIVE_PROMPT, interactiveClaw } from '../claw/script.ts'

export default defineAgentModule({
  id: 'claw',
  instructions: CLAW_INSTRUCTIONS,
  remoteTools: ['move_claw', 'drop_claw'],
  askHuman: {
    name: 'ask_kid',
    description: 'Ask Tina when you are not sure what she wants. Waits for her answer.',
    timeoutMs: 120_000,
  },
  maxTurns: 20,
  approvalTimeoutMs: 60_000,
  script: { [INTERACTIVE_MODEL]: interactiveClaw },
  input: INTERACTIVE_PROMPT,
})
