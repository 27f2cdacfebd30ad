/**
 * The data of a deployment: the bucket (every tenant's files, layers, records and the KV store
 * under kv/: lib/runtime/aws.ts) and the table for usage aggregates, limits and idempotency keys
 * (issue #28 §1–§3). Nothing public, TLS only, encrypted at rest.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";

export class ToolshedData extends Construct {
  readonly bucket: s3.Bucket;
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, "Files", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      // The app keeps its own versions (layers, checkpoints, undo) and frees bytes by GC; S3
      // versioning would keep every overwritten and deleted object, which GC could then never free.
      versioned: false,
      lifecycleRules: [{ abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Generic keys: pk = what a record belongs to (e.g. "usage#<tenant>", "limits#<tenant>",
    // "idem#<tenant>"), sk = which record (e.g. "<hour>#<key>#<workspace>#<tool>", an idempotency key).
    // expires_at (epoch seconds) lets DynamoDB drop idempotency keys after 24 h at no cost.
    this.table = new dynamodb.Table(this, "Usage", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      sortKey: { name: "sk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: "expires_at",
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
