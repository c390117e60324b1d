import { subjects } from '../subject.ts';

export const identityAdminSubjects = subjects({});
