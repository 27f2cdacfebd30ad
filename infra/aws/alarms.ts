/** Alarms on every function's errors and throttles, sent to one SNS topic (subscribe to it: docs/deploying-aws.md). */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as sns from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";

export class FunctionAlarms extends Construct {
  readonly topic: sns.Topic;

  constructor(scope: Construct, id: string, functions: Record<string, lambda.IFunction>) {
    super(scope, id);
    this.topic = new sns.Topic(this, "Topic", { displayName: "Toolshed alarms" });
    const notify = new actions.SnsAction(this.topic);
    for (const [name, fn] of Object.entries(functions)) {
      const metrics = { Errors: fn.metricErrors({ period: Duration.minutes(5) }), Throttles: fn.metricThrottles({ period: Duration.minutes(5) }) };
      for (const [kind, metric] of Object.entries(metrics)) {
        new cloudwatch.Alarm(this, `${name}${kind}`, {
          alarmDescription: `Toolshed ${name}: ${kind.toLowerCase()} in the last 5 minutes`,
          metric: metric.with({ statistic: "Sum" }),
          threshold: 1,
          evaluationPeriods: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        }).addAlarmAction(notify);
      }
    }
  }
}
