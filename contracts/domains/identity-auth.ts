import { subjects } from '../subject.ts';

export const identityAuthSubjects = subjects({});
