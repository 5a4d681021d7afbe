import type OpenAI from 'openai';
import type { Response } from 'openai/resources/responses/responses';

/** Function tools only programs may call, plus the entry that enables programs. */
export function programTools(...names: string[]): OpenAI.Responses.Tool[] {
  return [
    ...names.map(
      (name): OpenAI.Responses.Tool => ({
        type: 'function',
        name,
        parameters: { type: 'object', properties: {}, additionalProperties: true },
        strict: false,
        allowed_callers: ['programmatic'],
      }),
    ),
    { type: 'programmatic_tool_calling' },
  ];
}

/** A user message carrying a program for the inline stand-in. */
export function inlineProgram(code: string): string {
  return `Run this:\n\`\`\`js\n${code}\n\`\`\``;
}

export function programOutputOf(response: Response): OpenAI.Responses.ResponseOutputItem.ProgramOutput | undefined {
  return response.output.find((item): item is OpenAI.Responses.ResponseOutputItem.ProgramOutput => item.type === 'program_output');
}

export function functionCallsOf(response: Response): OpenAI.Responses.ResponseFunctionToolCall[] {
  return response.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
}
