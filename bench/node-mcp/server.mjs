// A minimal but real stdio MCP server on the official TypeScript SDK, with one
// trivial tool: the usual alternative to `hub mcp`, timed beside it by
// bench/cmd/benchreport for the cold-start figure (spawn → initialize answered).
// stdout carries the protocol only; nothing else may write to it.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "hub-bench-node-mcp", version: "0.0.0" });

server.registerTool(
  "echo",
  {
    description: "Return the text it is given.",
    inputSchema: { text: z.string().describe("text to return") },
  },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);

await server.connect(new StdioServerTransport());
