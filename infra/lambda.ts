/** AWS Lambda entry (API Gateway v2 / function URL): the same app over S3. */
import { handle } from "hono/aws-lambda";
import { tools } from "../functions/index.js";
import { createApp } from "../lib/app.js";
import { fromAwsEnv } from "../lib/env-aws.js";

export const handler = handle(createApp(fromAwsEnv(process.env), tools));
