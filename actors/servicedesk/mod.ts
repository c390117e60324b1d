/**
 * What the service desk offers code outside it: the upload store the console gateway streams attachments into
 * (the upload itself is authorized and recorded through the service desk's subjects).
 */
export { UploadStore } from './uploads/store.ts';
