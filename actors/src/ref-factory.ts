import { type ActorAddress } from '@troupe/proto';
import { type AnyActorDefinition } from './actor-definition';
import { type ActorRef, type UntypedActorRef } from './actor-ref';

/** Creates refs; implemented by the actor system and by each turn's context. */
export interface RefFactory {
  /** A typed ref to actor `id` of definition `def`. */
  ref<D extends AnyActorDefinition>(def: D, id: string): ActorRef<D>;
  /** An untyped ref by address (payloads are validated by the receiver only). */
  refOf(addr: ActorAddress): UntypedActorRef;
}
