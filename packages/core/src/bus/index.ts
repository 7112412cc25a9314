/** `@signalbox/core/bus`: the message bus agents and services talk over, and its in-process transport. */
export type {
  Bus,
  BusHeaders,
  BusMessage,
  BusStatus,
  DurableConsumeOptions,
  DurableHandler,
  DurableMessage,
  DurablePublishOptions,
  MessageHandler,
  PublishOptions,
  RequestManyOptions,
  RequestOptions,
  SubscribeOptions,
  Subscription,
} from './bus.ts'
export {
  BusClosedError,
  BusError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  DurableConsumerConflictError,
  DurableSubjectError,
  type HandlerErrorContext,
  type HandlerErrorListener,
  InvalidSubjectError,
} from './errors.ts'
export { createInProcessBus, InProcessBus, type InProcessBusOptions } from './in-process-bus.ts'
export {
  type BucketAccess,
  type ConsumerUse,
  DEFAULT_DIRECTORY_BUCKET,
  DEFAULT_RUN_BUCKET,
  directoryBucket,
  KV_BUCKETS,
  type KvBucketName,
  type KvBucketUse,
  ROLES,
  type Role,
  SUBJECT_FAMILIES,
  type SubjectFamily,
  type SubjectFamilyName,
  type SubjectToken,
  type SubjectUse,
} from './subject-families.ts'
export { createSubjects, DEFAULT_SUBJECT_PREFIX, defaultDurableSubjects, type Subjects } from './subjects.ts'
