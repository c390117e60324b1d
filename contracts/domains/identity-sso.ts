import { subjects } from '../subject.ts';

export const identitySsoSubjects = subjects({});
