/**
 * The agent's side of trust for the commands that run agents (`run`, `host`): `--trust FILE`, the
 * policy of who may approve, answer, steer and cancel (docs/security.md, "Trust policy files"), and
 * `--signing-key FILE`, the agent's own nkey seed (its approval requests and audit entries are
 * signed with it; it may never approve its own calls). Runtime-free until the files are read.
 */
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
    return { trust: undefined, signer: undefined, trustFile: undefined, signingKeyFile: undefined }
  }
  if (trustFile === undefined && signingKeyFile === undefined)
    return { trust: undefined, signer: undefined, trustFile, signingKeyFile }
  const [{ readFile }, path, { createSigner, parseTrustPolicy }] = await Promise.all([
    import('node:fs/promises'),
    import('node:path'),
    import('@signalbox/actors/trust'),
  ])
  const read = async (file: string, what: string, code: string) => {
    try {
      return await readFile(path.resolve(context.io.cwd, file), 'utf8')
    } catch (error) {
      const why = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message
      throw new CliError(code, `cannot read the ${what} ${file}: ${why}`)
    }
  }
  let signer: Signer | undefined
  if (signingKeyFile !== undefined) {
    const seed = await read(signingKeyFile, 'signing key file', 'SIGNING_KEY_UNREADABLE')
    try {
      signer = createSigner(seed)
    } catch (error) {
      // The library's message never quotes the seed.
      throw new CliError('SIGNING_KEY_INVALID', `the signing key file ${signingKeyFile} is ${(error as Error).message}`)
    }
  }
  let trust: TrustPolicy | undefined
  if (trustFile !== undefined) {
    const document = await read(trustFile, 'trust policy file', 'TRUST_FILE_UNREADABLE')
    try {
      trust = parseTrustPolicy(document, signer ? { ownKey: signer.publicKey } : {})
    } catch (error) {
      throw new CliError('TRUST_POLICY_INVALID', `the trust policy ${trustFile} is not valid: ${(error as Error).message}`)
    }
  }
  return { trust, signer, trustFile, signingKeyFile }
}

/** One line for a banner: which policy, how many keys, and the agent's own key. */
export function trustLine(trust: TrustPolicy | undefined, trustFile: string | undefined, signer: Signer | undefined): string {
  const policy = trust
    ? `decisions, answers, steering and cancels checked against ${trustFile} (${Object.keys(trust.options.keys).length} key${Object.keys(trust.options.keys).length === 1 ? '' : 's'})`
    : 'decisions not checked (no --trust)'
  return `${policy}; ${signer ? `signing as ${signer.publicKey}` : 'unsigned (no --signing-key)'}`
}
