/**
 * `signalbox keys gen`: a user nkey, the key every signing flag takes (`--nkey`, `--signing-key`)
 * and every trust policy lists, without installing the `nk` tool.
 */
import { CliError, type Command, EXIT } from '../cli.ts'

export const keysGen: Command = {
  name: 'keys gen',
  summary: 'make a user nkey: a seed to sign with and its public key for trust policies',
  usage: 'keys gen [--out <file>] [--force] [flags]',
  description: [
    'Makes a fresh user nkey (ed25519), the kind `nk -gen user -pubout` makes. The seed (SU...) is',
    'the secret: give its file to --nkey, --signing-key or NATS_NKEY. The public key (U...) is what',
    'others list: in a trust policy ("keys", "reviewers", "steerers"...), --agent-key, or the',
    'nkey of a nats-server user (signalbox nats permissions --nkey).',
    'With --out the seed goes to that file, readable by you only (mode 0600), and only the public',
    'key is printed; an existing file is kept unless --force. Without --out both are printed: the',
    'seed on the first line, the public key on the second.',
  ].join('\n'),
  options: {
    out: { type: 'string', valueName: '<file>', description: 'write the seed to this file (mode 0600)' },
    force: { type: 'boolean', description: 'with --out: replace an existing file (its key is lost)' },
  },
  bus: 'none',
  maxArgs: 0,
  examples: [
    ['signalbox keys gen --out tina.nk', "tina's seed in tina.nk; prints her public key for the trust policy"],
    ['signalbox keys gen --out claw.nk --json', '{"publicKey":"U...","file":"claw.nk"}'],
    ['signalbox keys gen', 'seed and public key on stdout, as nk -gen user -pubout prints them'],
  ],
  async run(context) {
    const out = context.values.out as string | undefined
    const [{ createSigner, newUserSeed }, path, fs] = await Promise.all([
      import('@signalbox/actors/trust'),
      import('node:path'),
      import('node:fs/promises'),
    ])
    const seed = newUserSeed()
    const { publicKey } = createSigner(seed)
    if (out === undefined) {
      if (context.global.json) context.out(JSON.stringify({ publicKey, seed }))
      else {
        context.out(seed)
        context.out(publicKey)
        context.err(
          context.c.dim('The first line is the seed: keep it secret (--out <file> writes it to a file only you can read).'),
        )
      }
      return EXIT.ok
    }
    const file = path.resolve(context.io.cwd, out)
    try {
      // `wx` never replaces a key by accident; the mode applies to a file this call creates.
      await fs.writeFile(file, `${seed}\n`, { mode: 0o600, flag: context.values.force === true ? 'w' : 'wx' })
      // A replaced file keeps its old mode: make it private too.
      await fs.chmod(file, 0o600)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'EEXIST')
        throw new CliError('KEY_FILE_EXISTS', `${out} exists: it may hold a key in use; pass --force to replace it`, {
          details: { file },
        })
      throw new CliError('KEY_FILE_UNWRITABLE', `cannot write the seed to ${out}`, { cause: error, details: { file } })
    }
    if (context.global.json) context.out(JSON.stringify({ publicKey, file: out }))
    else {
      context.out(publicKey)
      context.err(context.c.dim(`seed written to ${out} (mode 0600); the public key above goes in trust policies`))
    }
    return EXIT.ok
  },
}
