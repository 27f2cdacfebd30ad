/**
 * The data of a deployment: the bucket (every tenant's files, layers, records and the KV store
 * under kv/: lib/runtime/aws.ts) and the table of usage and limits (issue #28 §1–§2; docs/usage.md,
 * docs/limits-and-quotas.md). Nothing public, TLS only, encrypted at rest.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { TABLE_KEYS } from "../../lib/shared/dynamodb-table.ts";

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
    // The API's usage and limits stores (lib/shared/dynamodb-table.ts: the key and TTL names, and
    // each store's items): pk = what an item belongs to ("usage#<tenant>", "limits#<tenant>"),
    // sk = which item. DynamoDB deletes an item once its TTL attribute (epoch seconds) has passed:
    // raw usage records after 35 days, at no cost. The construct id stays "Usage" (a new id would replace the table).
    this.table = new dynamodb.Table(this, "Usage", {
      partitionKey: { name: TABLE_KEYS.partition, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_KEYS.sort, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: TABLE_KEYS.ttl,
      removalPolicy: RemovalPolicy.RETAIN,
    });
  }
}
