import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from '../../platform/logger.ts';

/** The Fastify instance of a gateway: node's HTTP server, the project's logger, zod schemas on routes. */
export type GatewayApp = FastifyInstance<Server, IncomingMessage, ServerResponse, Logger, ZodTypeProvider>;
