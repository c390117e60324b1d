import { z } from 'zod';

/**
 * Field schemas of the invoicing wire (requests, replies, ingest batches). Money, hours, quantities and multipliers
 * are decimal STRINGS everywhere (docs/api/invoicing.md#amounts-and-the-rounding-policy): a JSON number would pass
 * through a float.
 */

const decimal = (maxInt: number, maxFrac: number, signed: boolean): z.ZodString =>
  z
    .string()
    .regex(
      new RegExp(`^${signed ? '-?' : ''}\\d{1,${maxInt}}(\\.\\d{1,${maxFrac}})?$`),
      `must be a decimal string with at most ${maxInt} digits before and ${maxFrac} after the point`,
    );

/** An amount in a currency's major unit, cents at most: `"1234.50"`. Negative allowed (credits, discounts). */
export const Amount = decimal(13, 2, true);
/** A non-negative amount (prices and rates of the analytics model). */
export const PositiveAmount = decimal(13, 2, false);
/** Hours or quantities: 4 decimals (the rounding policy keeps hours at 4 decimals until a line total). */
export const Quantity = decimal(12, 4, true);
export const PositiveQuantity = decimal(12, 4, false);
/** A unit price: a rate times a multiplier keeps up to 6 decimals (2 + 4) without rounding. */
export const UnitPrice = decimal(13, 6, true);
/** A rate-tier multiplier, 4 decimals. */
export const Multiplier = decimal(4, 4, false);

/** `YYYY-MM-DD`, a real calendar date. */
export const DateOnly = z.iso.date();

/** Keys of the analytics model (applications, customers, tracker tasks): printable, no spaces at the ends. */
export const Key = z
  .string()
  .min(1, 'must not be empty')
  .max(100, 'is too long')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:\-/]*$/, 'must be letters, digits and . _ : - /, starting with a letter or digit');

/** Short codes of the deal kinds (see actors/invoice/amounts/policy.ts). */
export const DEAL_TYPES = ['RET', 'TM', 'FIX'] as const;
export const DealType = z.enum(DEAL_TYPES);
export type DealType = z.infer<typeof DealType>;

/** ISO 4217 shape; the amounts policy assumes two minor digits (every currency of the model has them). */
export const Currency = z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter currency code');
