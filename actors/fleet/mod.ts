/**
 * What the fleet domain offers code outside it: its metrics store's client, for the console gateway's streamed
 * chart reads (the query is planned and authorized by the fleet's subjects first), and the store's error mapping.
 */
export { Tsdb, TsdbError, type TsdbAnswer, type TsdbBases } from './metrics/tsdb.ts';
export { tsdbFailure } from './metrics/tsdb-errors.ts';
