import { validatorCompiler } from 'fastify-type-provider-zod';
import { rejectUnstorableStrings } from '../validation.ts';
import { appPlugin } from './define.ts';

/** Requests are checked against the routes' zod schemas; answers are written as plain JSON. */
export const schemaValidation = appPlugin('gateway-schema-validation', async (app) => {
  app.setValidatorCompiler(validatorCompiler);
  // Before the route's schema, for every route: NUL characters and lone surrogates are 400 naming the field.
  app.addHook('preValidation', rejectUnstorableStrings);
  // Response schemas are declared for the OpenAPI document only: actors already validated their replies against
  // the catalogue, so the gateway serializes plain JSON instead of parsing every reply a second time.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
});
