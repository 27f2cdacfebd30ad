/** The API's version: the root route, the OpenAPI document and the MCP server's info report it. */
export const API_VERSION = "0.1.0";
