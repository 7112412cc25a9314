/**
 * signalbox's own schemas as their declaration files name them. Those files are read with the
 * user's zod, any version the peer range allows (zod 3.25's `zod/v4` included), so an exported
 * schema's type must mean the same in each: `ZodDiscriminatedUnion` took a second type parameter
 * in zod 4.x (TS2707 under zod 3.25), the `ZodUnion` it extends did not.
 */
import { z } from 'zod/v4'

type Discriminable = z.core.$ZodTypeDiscriminable

/** `z.discriminatedUnion`, declared as the `z.ZodUnion` it is. */
export function discriminatedUnion<const T extends readonly [Discriminable, ...Discriminable[]]>(
  discriminator: string,
  options: T,
): z.ZodUnion<T> {
  return z.discriminatedUnion(discriminator, options)
}
