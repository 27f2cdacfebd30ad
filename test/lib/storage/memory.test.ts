import { memoryDriver } from "../../../lib/storage/drivers/memory.js";
import { describeStorageConformance } from "./conformance.js";

describeStorageConformance("memory", () => memoryDriver());
// As S3 answers (MD5 etags, bare listings): the stand-in for S3 in tests of what a listing alone tells.
describeStorageConformance("memory (s3Like)", () => memoryDriver({ s3Like: true }));
