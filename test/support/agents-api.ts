import { inlineProgram } from './programs.ts';

/** Two function tools an agent's program calls together. */
export const AGENT_TOOLS = [
  {
    type: 'function' as const,
    name: 'get_price',
    description: 'The unit price of a SKU.',
    parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
  },
  {
    type: 'function' as const,
    name: 'get_stock',
    description: 'The units in stock of a SKU.',
    parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
  },
];

/** A program calling both tools at once: its answer is `{"value":42}` with answerOf's outputs. */
export const PRICING_PROGRAM = inlineProgram(`
const [price, stock] = await Promise.all([tools.get_price({ sku: 'sku_1' }), tools.get_stock({ sku: 'sku_1' })]);
text({ value: JSON.parse(price).price * JSON.parse(stock).units });
`);

/** For an agent with PTC off: both tools called directly at once, then their outputs as the message. */
export const PRICING_SCENARIOS = {
  rules: [
    {
      match: { user: 'value of stock directly' },
      calls: [
        { name: 'get_price', arguments: { sku: 'sku_1' } },
        { name: 'get_stock', arguments: { sku: 'sku_1' } },
      ],
      message: 'Outputs: {{outputs}}',
    },
    // A slow "model": its responses take 1.5 s, so a request can reach the session meanwhile.
    { match: { user: 'take your time' }, knobs: { delay_ms: 1500 }, message: 'Done slowly.' },
  ],
};

/** What the client's tools answer. */
export function answerOf(name: string): string {
  return name === 'get_price' ? JSON.stringify({ price: 7 }) : JSON.stringify({ units: 6 });
}
