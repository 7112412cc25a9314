/**
 * The agent's side of trust for the commands that run agents (`run`, `host`): `--trust FILE`, the
 * policy of who may approve, answer, steer and cancel (docs/security.md, "Trust policy files"), and
 * `--signing-key FILE`, the agent's own nkey seed (its approval requests and audit entries are
 * signed with it; it may never approve its own calls). And the reviewer's side (`review`,
 * `console`): the same file, read for whose requests, decisions and answers to believe.
 * Runtime-free until the files are read.
 */
import type { ErrorCode } from '@signalbox/core'
import { CliError, type CommandContext, type OptionSpec, UsageError } from './cli.ts'

export const TRUST_OPTIONS: Record<string, OptionSpec> = {
  trust: {
    type: 'string',
    valueName: '<file>',
    description:
      'trust policy (JSON): the public nkeys that may approve each tool, answer, steer and cancel; anything else is rejected and audited',
    default: '$SIGNALBOX_TRUST, else decisions are not checked',
  },
  'signing-key': {
    type: 'string',
    valueName: '<file>',
    description: "the agent's nkey seed: signs its approval requests and audit entries; never approves its own calls",
    default: '$SIGNALBOX_SIGNING_KEY, else the --nkey seed, else unsigned',
  },
}

type Signer = import('@signalbox/actors/trust').Signer
type TrustPolicy = import('@signalbox/actors/trust').TrustPolicy

/** What the agent's side is given: who it trusts, and its own key (each undefined when not given). */
export interface AgentTrust {
  trust: TrustPolicy | undefined
  signer: Signer | undefined
  /** Where each came from, for the banner. */
  trustFile: string | undefined
  signingKeyFile: string | undefined
}

/**
 * Reads `--trust` / `$SIGNALBOX_TRUST` and `--signing-key` / `$SIGNALBOX_SIGNING_KEY` (else the
 * `--nkey` / `$NATS_NKEY` seed the agent logs in with). A file that cannot be read, is not a policy
 * or not a seed is refused with a clear error naming the file and never quoting a seed.
 */
export async function agentTrustFrom(context: CommandContext): Promise<AgentTrust> {
  const text = (name: string, env: string) => {
    const flag = context.values[name]
    if (typeof flag === 'string') return flag
    const fromEnv = context.io.env[env]
    return fromEnv ? fromEnv : undefined
  }
  const trustFile = text('trust', 'SIGNALBOX_TRUST')
  const signingKeyFile = text('signing-key', 'SIGNALBOX_SIGNING_KEY') ?? text('nkey', 'NATS_NKEY')
  if ((trustFile !== undefined || signingKeyFile !== undefined) && !context.global.nats) {
    const given = context.values.trust !== undefined || context.values['signing-key'] !== undefined
    // Only the flags are an error: the variables may be set for the operator's other commands.
    if (given)
      throw new UsageError(
        '--trust and --signing-key are for agents on a bus (--nats): embedded, the reviewer is this terminal',
        context.command,
      )
    // Not silently, though: someone who set them expects decisions to be checked, and here none are.
    const unused = ['SIGNALBOX_TRUST', 'SIGNALBOX_SIGNING_KEY'].filter((name) => context.io.env[name])
    if (unused.length > 0)
      context.err(
        `${context.c.yellow('warning')}: ${unused.map((name) => `$${name}`).join(' and ')} ${unused.length === 1 ? 'is' : 'are'} set but not used: trust policies and signing keys are for agents on a bus (--nats); embedded, the reviewer is this terminal, nothing is signed or checked`,
      )
    return { trust: undefined, signer: undefined, trustFile: undefined, signingKeyFile: undefined }
  }
  if (trustFile === undefined && signingKeyFile === undefined)
    return { trust: undefined, signer: undefined, trustFile, signingKeyFile }
  const { createSigner } = await import('@signalbox/actors/trust')
  let signer: Signer | undefined
  if (signingKeyFile !== undefined) {
    const seed = await readText(context, signingKeyFile, 'signing key file', 'SIGNING_KEY_UNREADABLE')
    try {
      signer = createSigner(seed)
    } catch (error) {
      // The library's message never quotes the seed.
      throw new CliError('SIGNING_KEY_INVALID', `the signing key file ${signingKeyFile} is ${(error as Error).message}`)
    }
  }
  const trust =
    trustFile === undefined ? undefined : await readTrustPolicy(context, trustFile, signer ? { ownKey: signer.publicKey } : {})
  return { trust, signer, trustFile, signingKeyFile }
}

async function readText(context: CommandContext, file: string, what: string, code: ErrorCode): Promise<string> {
  const [{ readFile }, path] = await Promise.all([import('node:fs/promises'), import('node:path')])
  try {
    return await readFile(path.resolve(context.io.cwd, file), 'utf8')
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message
    throw new CliError(code, `cannot read the ${what} ${file}: ${why}`)
  }
}

async function readTrustPolicy(context: CommandContext, file: string, options: { ownKey?: string }): Promise<TrustPolicy> {
  const [document, { parseTrustPolicy }] = await Promise.all([
    readText(context, file, 'trust policy file', 'TRUST_FILE_UNREADABLE'),
    import('@signalbox/actors/trust'),
  ])
  try {
    return parseTrustPolicy(document, options)
  } catch (error) {
    throw new CliError('TRUST_POLICY_INVALID', `the trust policy ${file} is not valid: ${(error as Error).message}`)
  }
}

/** `--trust` and `--agent-key` for the commands that review (`review`, `console`). */
export const REVIEWER_TRUST_OPTIONS: Record<string, OptionSpec> = {
  trust: {
    type: 'string',
    valueName: '<file>',
    description:
      "trust policy (JSON, the agents' format): only decisions and answers signed by its reviewers and answerers settle a request or question elsewhere; its agents' keys must sign requests",
    default: '$SIGNALBOX_TRUST, else not checked',
  },
  'agent-key': {
    type: 'string',
    valueName: '<UA...>',
    description: "agents' public nkeys: show only requests they signed, marked verified (added to the policy's agents)",
    default: 'requests are not checked',
    multiple: true,
  },
}

/** The reviewer's side of trust: the policy it checks what it sees against, and where it came from. */
export interface ReviewerTrust {
  trust: TrustPolicy | undefined
  trustFile: string | undefined
  /** Requests are checked (the policy names agents): show each request's origin. */
  checksRequests: boolean
}

/**
 * Reads `--trust` / `$SIGNALBOX_TRUST` (the same file format as the agents') and `--agent-key`
 * for a reviewer watching `agentId` (or every agent). `agents` (and the agent keys): who sends
 * requests, unchecked when neither is given; `reviewers`, `answerers`: the only ones whose
 * decisions and answers settle a request or question elsewhere (none without the section), as
 * they are the only ones the agents accept.
 */
export async function reviewerTrustFrom(context: CommandContext, agentId: string | undefined): Promise<ReviewerTrust> {
  const agentKeys = ((context.values['agent-key'] as string | undefined) ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter(Boolean)
  const flag = context.values.trust
  const trustFile = typeof flag === 'string' ? flag : context.io.env.SIGNALBOX_TRUST || undefined
  const fromFile = trustFile === undefined ? undefined : await readTrustPolicy(context, trustFile, {})
  let trust = fromFile
  if (agentKeys.length > 0) {
    const { agentKeysPolicy } = await import('@signalbox/actors/trust')
    try {
      trust = agentKeysPolicy(agentKeys, agentId, fromFile)
    } catch (error) {
      throw new UsageError(`--agent-key: ${(error as Error).message}`, context.command)
    }
  }
  return { trust, trustFile, checksRequests: trust?.options.agents !== undefined }
}

/**
 * What a reviewer should know about its own key under the policy it was given: a key the policy
 * does not list as a reviewer (or answerer) signs decisions (answers) that agents with that policy
 * refuse. A wrong seed file is an easy mistake, and otherwise only shows at the agent.
 */
export function reviewerKeyWarnings(trust: TrustPolicy | undefined, signer: Signer | undefined, answers: boolean): string[] {
  if (trust === undefined || signer === undefined) return []
  const key = signer.publicKey
  const { reviewers, answerers } = trust.options
  const lists = reviewers === undefined ? undefined : Array.isArray(reviewers) ? [reviewers] : Object.values(reviewers)
  const warnings: string[] = []
  if (lists !== undefined && !lists.some((list) => list.includes(key)))
    warnings.push(`your key ${key} is not among the policy's reviewers: agents with this policy refuse its decisions`)
  if (answers && answerers !== undefined && !answerers.includes(key))
    warnings.push(`your key ${key} is not among the policy's answerers: agents with this policy refuse its answers`)
  return warnings
}

/** One line for a reviewer's banner: what is checked, and against which file. */
export function reviewerTrustLine({ trust, trustFile }: ReviewerTrust): string {
  if (trust === undefined) return 'nothing checked (no --trust or --agent-key)'
  const { agents, reviewers, answerers } = trust.options
  const checked = [
    agents !== undefined ? "requests must be signed by the agents' keys" : 'requests not checked',
    reviewers !== undefined
      ? 'only its reviewers settle requests elsewhere'
      : 'no decision elsewhere settles a request (no reviewers)',
    answerers !== undefined
      ? 'only its answerers settle questions elsewhere'
      : 'no answer elsewhere settles a question (no answerers)',
  ]
  return `${trustFile ? `trust policy ${trustFile}` : '--agent-key'}: ${checked.join('; ')}`
}

/** One line for a banner: which policy, how many keys, and the agent's own key. */
export function trustLine(trust: TrustPolicy | undefined, trustFile: string | undefined, signer: Signer | undefined): string {
  const policy = trust
    ? `decisions, answers, steering and cancels checked against ${trustFile} (${Object.keys(trust.options.keys).length} key${Object.keys(trust.options.keys).length === 1 ? '' : 's'})`
    : 'decisions not checked (no --trust)'
  return `${policy}; ${signer ? `signing as ${signer.publicKey}` : 'unsigned (no --signing-key)'}`
}
