import { subjects } from '../subject.ts';

export const fleetInventorySubjects = subjects({});
