/**
 * Every subject signalbox uses, once: how it is built (its template) and who uses it how. The
 * subject builders (`createSubjects`) are made from the templates, and the per-role NATS
 * permissions (`signalbox nats permissions`, docs/security.md) from the uses, so a subject cannot be
 * added to the code without being granted to the roles that need it, nor granted without a use.
 *
 * A template is the subject after the prefix: literal tokens, `{name}` for one variable token and
 * `{name?}` for an optional one that, when not given, ends the subject with `>` (the rest).
 */

/** The parts of a deployment, each run as its own NATS user (docs/security.md). */
export const ROLES = ['agent', 'reviewer', 'answerer', 'steering', 'tool-host', 'observer', 'console'] as const
export type Role = (typeof ROLES)[number]

/** The variable tokens of the templates. */
export type SubjectToken = 'agent' | 'tool' | 'run' | 'type' | 'kind' | 'component' | 'runtime'

export interface SubjectUse {
  /** Why the role needs it (the permission tables of docs/security.md). */
  why: string
  /**
   * Whose use it is: the role's own (`self`, the default: the `{agent}` token stands for the agent
   * the user is, or for the others every agent they serve), or a parent agent's on behalf of the
   * agents it delegates to (`children`: granted only to an agent with children, the `{agent}` token
   * standing for them).
   */
  agents?: 'self' | 'children'
  /** Tokens the use is limited to (e.g. one audit kind), on top of the role's scope. */
  tokens?: Partial<Record<SubjectToken, string>>
}

/** A JetStream consumer a role reads the family through. */
export interface ConsumerUse extends SubjectUse {
  /** A private consumer, named `<user>_<purpose>` (the bus's `consumerPrefix`). */
  purpose?: string
  /**
   * One per agent: the purpose is `agentPurpose(purpose, agent)`, so a connection serving several
   * agents (a host) has one consumer for each, never one that replaces another's.
   */
  perAgent?: boolean
  /** A durable consumer shared by a pool (its default name; the deployment may choose another). */
  group?: 'reviewers' | 'answerers'
}

export interface SubjectFamily {
  template: string
  /** `publish`: fire and forget; `request`: request/reply; `durable`: through the JetStream stream. */
  transport: 'publish' | 'request' | 'durable'
  /** Roles that publish on it (for requests: that send them). */
  publish?: Partial<Record<Role, SubjectUse>>
  /** Roles with a core subscription on it (for requests: that answer them, through `allow_responses`). */
  subscribe?: Partial<Record<Role, SubjectUse>>
  /** Roles that read it through JetStream consumers (durable families). */
  consume?: Partial<Record<Role, readonly ConsumerUse[]>>
  /** Roles that read the newest stored message of one subject (`Bus.durableLast`: a direct get by subject). */
  read?: Partial<Record<Role, SubjectUse>>
  /** Roles denied publishing on it for every agent, even if an allow rule would match (defence in depth). */
  deny?: Partial<Record<Role, SubjectUse>>
}

const ERRORS_WHY = 'rejections nobody could be told about'

/** The subject families, by the name of their builder in `Subjects`. */
export const SUBJECT_FAMILIES = {
  approvals: {
    template: 'approvals.{agent}',
    transport: 'durable',
    publish: { agent: { why: 'approval requests (durable publish)' } },
    consume: {
      reviewer: [
        { group: 'reviewers', why: 'approval requests, shared by the reviewer group (shared mode, the default)' },
        { purpose: 'approvals', why: 'every approval request (broadcast mode)' },
      ],
      console: [{ purpose: 'approvals', why: 'every approval request' }],
    },
  },
  approvalDecisions: {
    template: 'approvals.{agent}.decisions',
    transport: 'durable',
    publish: { reviewer: { why: 'decisions (durable publish)' }, console: { why: 'decisions (durable publish)' } },
    consume: {
      agent: [{ purpose: 'decisions', perAgent: true, why: 'decisions on its approval requests' }],
      reviewer: [{ purpose: 'decided', why: 'decisions already made (skip what others decided)' }],
      console: [{ purpose: 'decided', why: 'decisions already made (skip what others decided)' }],
    },
    deny: { agent: { why: 'an agent never decides its own calls' } },
  },
  approvalWithdrawals: {
    template: 'approvals.{agent}.withdrawn',
    transport: 'durable',
    publish: { agent: { why: 'approval requests it no longer waits for (a correction, a cancel; durable publish)' } },
    consume: {
      reviewer: [{ purpose: 'withdrawn', why: 'requests their agents withdrew (stop showing them)' }],
      console: [{ purpose: 'withdrawn', why: 'requests their agents withdrew (stop showing them)' }],
    },
  },
  ask: {
    template: 'ask.{agent}',
    transport: 'durable',
    publish: { agent: { why: 'questions to a human (durable publish)' } },
    consume: {
      answerer: [
        { purpose: 'questions', why: 'every question (broadcast mode, the default)' },
        { group: 'answerers', why: 'questions, shared by the answerer group (shared mode)' },
      ],
      console: [{ purpose: 'questions', why: 'every question' }],
    },
  },
  answers: {
    template: 'ask.{agent}.answers',
    transport: 'durable',
    publish: { answerer: { why: 'answers (durable publish)' }, console: { why: 'answers (durable publish)' } },
    consume: {
      agent: [{ purpose: 'answers', perAgent: true, why: 'answers to its questions' }],
      answerer: [{ purpose: 'answered', why: 'questions already answered' }],
      console: [{ purpose: 'answered', why: 'questions already answered' }],
    },
    deny: { agent: { why: 'nor answers its own questions' } },
  },
  questionWithdrawals: {
    template: 'ask.{agent}.withdrawn',
    transport: 'durable',
    publish: { agent: { why: 'questions it no longer waits for (its run was cancelled or ended; durable publish)' } },
    consume: {
      answerer: [{ purpose: 'unasked', why: 'questions their agents withdrew (stop showing them)' }],
      console: [{ purpose: 'unasked', why: 'questions their agents withdrew (stop showing them)' }],
    },
  },
  steer: {
    template: 'agents.{agent}.steer',
    transport: 'durable',
    publish: { steering: { why: 'steering (durable publish)' }, console: { why: 'steering (durable publish)' } },
    consume: { agent: [{ purpose: 'steer', perAgent: true, why: 'steering (durable)' }] },
  },
  alive: {
    template: 'agents.{agent}.alive',
    transport: 'publish',
    publish: { agent: { why: 'heartbeats of its pending approval requests (no run store)' } },
    subscribe: {
      reviewer: { why: 'the agents’ heartbeats: a request whose agent is gone is withdrawn as orphaned' },
      console: { why: 'the agents’ heartbeats: a request whose agent is gone is withdrawn as orphaned' },
    },
  },
  control: {
    template: 'agents.{agent}.control',
    transport: 'request',
    publish: {
      steering: { why: 'cancel and status requests (replies come to the inbox)' },
      console: { why: 'cancel and status requests (replies come to the inbox)' },
      agent: { why: 'cancels of the child runs it started (signed)', agents: 'children' },
    },
    subscribe: { agent: { why: 'cancel and status requests (answered through allow_responses)' } },
  },
  tool: {
    template: 'tools.{tool}',
    transport: 'request',
    publish: { agent: { why: 'tool calls (requests)' } },
    subscribe: { 'tool-host': { why: 'tool calls (queue group signalbox-tools), answered through allow_responses' } },
  },
  toolDescribe: {
    template: 'tools.{tool}.describe',
    transport: 'request',
    publish: { agent: { why: 'remote tool descriptions (requests)' } },
    subscribe: { 'tool-host': { why: 'description requests' } },
  },
  toolCatalog: {
    template: 'tools',
    transport: 'request',
    publish: { agent: { why: 'what the tool hosts serve (request to every host)' } },
    subscribe: { 'tool-host': { why: 'tool list requests (every host answers, through allow_responses)' } },
  },
  events: {
    template: 'agents.{agent}.events.{type?}',
    transport: 'publish',
    publish: { agent: { why: 'its events' } },
    subscribe: { observer: { why: 'agent events (observe only)' }, console: { why: 'agent events (observe only)' } },
  },
  audit: {
    template: 'audit.{agent?}.{kind?}',
    transport: 'durable',
    publish: {
      agent: { why: 'its audit entries (durable publish)' },
      'tool-host': {
        why: 'calls refused for want of a valid approval (a host that verifies approvals; durable publish)',
        tokens: { kind: 'tool.refused' },
      },
    },
    consume: {
      observer: [{ purpose: 'audit', why: 'reading the audit trail' }],
      console: [{ purpose: 'audit', why: 'reading the audit trail' }],
    },
  },
  agentRun: {
    template: 'agents.{agent}.run',
    transport: 'request',
    publish: { agent: { why: 'starts runs of the agents it delegates to (requests)', agents: 'children' } },
    subscribe: { agent: { why: 'runs to start here (queue group hosts-<agent>), answered through allow_responses' } },
  },
  runResult: {
    template: 'runs.{run}.result',
    transport: 'durable',
    publish: { agent: { why: 'how the runs it hosts for a parent ended (durable publish)' } },
    consume: { agent: [{ purpose: 'results', why: 'how its child runs ended', agents: 'children' }] },
    read: {
      agent: { why: 'the stored result of a child run it re-attaches to (after a crash or a takeover)', agents: 'children' },
    },
  },
  runHeartbeat: {
    template: 'heartbeats.{run}',
    transport: 'request',
    publish: {
      agent: { why: 'heartbeats for its child runs (requests: the host running the child answers)', agents: 'children' },
    },
    subscribe: {
      agent: { why: 'its parents’ heartbeats for the runs it hosts (their lease), answered through allow_responses' },
    },
  },
  errors: {
    template: 'errors.{component?}',
    transport: 'publish',
    publish: {
      agent: { why: ERRORS_WHY },
      reviewer: { why: ERRORS_WHY },
      answerer: { why: ERRORS_WHY },
      'tool-host': { why: ERRORS_WHY },
      console: { why: ERRORS_WHY },
    },
    subscribe: { observer: { why: 'rejections (operators)' } },
  },
  inspect: {
    template: 'inspect.{runtime}',
    transport: 'publish',
    publish: { agent: { why: 'inspection of its runs (observe only, any runtime id)' } },
    subscribe: { observer: { why: 'inspection relay (signalbox inspect)' }, console: { why: 'each run’s state' } },
  },
  directory: {
    template: 'directory',
    transport: 'publish',
  },
} as const satisfies Record<string, SubjectFamily>

export type SubjectFamilyName = keyof typeof SUBJECT_FAMILIES

/** The purpose of a consumer kept per agent (`<agent>_<purpose>`: named `<user>_<agent>_<purpose>`). */
export function agentPurpose(purpose: string, agentId: string): string {
  return `${agentId}_${purpose}`
}

/** What a role does with a JetStream KV bucket: `write` creates it, puts and deletes; `read` gets, lists and watches. */
export type BucketAccess = 'read' | 'write'

export interface KvBucketUse {
  /** What the bucket holds. */
  holds: string
  access: Partial<Record<Role, BucketAccess>>
  /**
   * Why its writers also purge keys from the bucket's stream (`$JS.API.STREAM.PURGE`): a deletion
   * that leaves nothing behind. Writers can already roll a key up (a KV purge), so this grants no
   * more than they have.
   */
  purge?: string
}

/**
 * The KV buckets, by what they are for: the run store (`KvRunStore`, `signalbox host --run-bucket`),
 * the directory of agent hosts (`signalbox host`) and the approvals the enforcing tool hosts of a
 * pool used (`serveTools({ approvals })`, `signalbox tools serve --approve`). Their names are the
 * deployment's (`runBucket`, `directoryBucket(prefix)`, `usedApprovalsBucket(prefix)`).
 */
export const KV_BUCKETS = {
  runs: {
    holds: 'stored runs',
    access: { agent: 'write', observer: 'read' },
    purge: 'deletes a run, leaving nothing behind (signalbox runs prune)',
  },
  directory: {
    holds: 'the directory of agent hosts',
    access: { agent: 'write' },
  },
  usedApprovals: {
    holds: 'the approvals enforcing tool hosts used, each for one call',
    access: { 'tool-host': 'write' },
  },
} as const satisfies Record<string, KvBucketUse>

export type KvBucketName = keyof typeof KV_BUCKETS

export const DEFAULT_RUN_BUCKET = 'signalbox_runs'
export const DEFAULT_DIRECTORY_BUCKET = 'signalbox_directory'

export const DEFAULT_USED_APPROVALS_BUCKET = 'signalbox_used_approvals'

/** The KV bucket of a deployment's directory (one per prefix, so deployments never mix). */
export function directoryBucket(prefix: string): string {
  return bucketOfPrefix(DEFAULT_DIRECTORY_BUCKET, prefix)
}

/** The KV bucket where a deployment's enforcing tool hosts remember the approvals they used (one per prefix). */
export function usedApprovalsBucket(prefix: string): string {
  return bucketOfPrefix(DEFAULT_USED_APPROVALS_BUCKET, prefix)
}

function bucketOfPrefix(base: string, prefix: string): string {
  return prefix === 'signalbox.v1' ? base : `${base}_${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}`
}
