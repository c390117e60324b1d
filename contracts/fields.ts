import { z } from 'zod';

/**
 * Field schemas shared by a request and the durable payloads built from it, so both refuse the same values (a value
 * the request accepts but the payload refuses would fail after the request was acknowledged).
 */

/**
 * An e-mail typed by someone signing in or asking for a reset: looked up, never stored. Trimmed and lower-cased
 * here (the lookup key), so the actor's normalization changes nothing and the payload sees the same string.
 */
export const EmailLookup = z.string().trim().toLowerCase().min(1, 'must not be empty').max(320, 'is too long');

/** Any JSON value; one named schema, so the OpenAPI document defines its recursion once (`#/components/schemas/JsonValue`). */
export const JsonValue = z.json();
// The schema z.json() recurses into is the one it returns: registered itself (not a .meta() copy), its recursion
// refers to the named component.
z.globalRegistry.add(JsonValue, { id: 'JsonValue' });
