import { subjects } from '../subject.ts';

export const fleetAgentSubjects = subjects({});
