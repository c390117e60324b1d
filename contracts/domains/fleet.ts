import { subjects } from '../subject.ts';

export const fleetSubjects = subjects({});
