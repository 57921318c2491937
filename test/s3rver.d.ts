// Types for s3rver (it ships none): only what test/_s3.ts uses.
declare module 's3rver' {
  import type { AddressInfo } from 'node:net';
  export default class S3rver {
    constructor(options: {
      port?: number; address?: string; silent?: boolean; directory?: string;
      configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>;
      allowMismatchedSignatures?: boolean;
    });
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}
