import fp from 'fastify-plugin';
import type { FastifyPluginAsync, FastifyPluginOptions } from 'fastify';
import type { Server } from 'node:http';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Logger } from '../../../platform/logger.ts';

/** A plugin of the gateways' app: registered on a GatewayApp, with its options. */
export type GatewayPlugin<Options extends FastifyPluginOptions = Record<never, never>> = FastifyPluginAsync<
  Options,
  Server,
  ZodTypeProvider,
  Logger
>;

/**
 * Marks `plugin` as one that adds to the app it is registered on rather than to a context of its own
 * (fastify-plugin): its hooks, handlers and routes apply to every route, in the order the plugins are registered.
 */
export function appPlugin<Options extends FastifyPluginOptions>(
  name: string,
  plugin: GatewayPlugin<Options>,
): GatewayPlugin<Options> {
  return fp(plugin, { name, fastify: '5.x' });
}
