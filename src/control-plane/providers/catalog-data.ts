/**
 * The embedded model-provider catalog: well-known providers, how to call them (API style and
 * base URL), the environment variable their tools conventionally read, and a selection of their
 * models. Compiled into the binary so `GET /v1/llm-provider-catalog` needs no network; replace
 * it with `llmProviderCatalogFile` when you need other providers or newer models.
 *
 * API styles: `openai` (OpenAI Chat Completions/Responses), `anthropic` (Messages), `google`
 * (Gemini generateContent), `openai-compatible` (OpenAI's wire format at another base URL),
 * `mistral`, `bedrock` (AWS Bedrock Converse), `azure-openai`.
 * @module
 */
import type { CatalogProvider } from './catalog-provider.ts'

const m = (
  id: string,
  name: string,
  contextWindow: number,
  extra: { reasoning?: boolean; toolCall?: boolean } = {},
) => ({
  id,
  name,
  contextWindow,
  reasoning: extra.reasoning ?? false,
  toolCall: extra.toolCall ?? true,
})

/** The catalog shipped with the server. */
export const EMBEDDED_PROVIDER_CATALOG: CatalogProvider[] = [
  {
    id: 'openai',
    name: 'OpenAI',
    api: 'openai',
    baseUrl: 'https://api.openai.com/v1',
    env: ['OPENAI_API_KEY'],
    doc: 'https://platform.openai.com/docs/models',
    requiresApiKey: true,
    models: [
      m('gpt-5', 'GPT-5', 400000, { reasoning: true }),
      m('gpt-5-mini', 'GPT-5 mini', 400000, { reasoning: true }),
      m('gpt-4.1', 'GPT-4.1', 1047576),
      m('gpt-4.1-mini', 'GPT-4.1 mini', 1047576),
      m('gpt-4o', 'GPT-4o', 128000),
      m('gpt-4o-mini', 'GPT-4o mini', 128000),
      m('o3', 'o3', 200000, { reasoning: true }),
      m('o4-mini', 'o4-mini', 200000, { reasoning: true }),
    ],
  },
  {
    id: 'anthropic',
    name: 'Anthropic',
    api: 'anthropic',
    baseUrl: 'https://api.anthropic.com/v1',
    env: ['ANTHROPIC_API_KEY'],
    doc: 'https://docs.anthropic.com/en/docs/about-claude/models',
    requiresApiKey: true,
    models: [
      m('claude-opus-4-1', 'Claude Opus 4.1', 200000, { reasoning: true }),
      m('claude-sonnet-4-5', 'Claude Sonnet 4.5', 200000, { reasoning: true }),
      m('claude-sonnet-4-0', 'Claude Sonnet 4', 200000, { reasoning: true }),
      m('claude-3-5-haiku-latest', 'Claude Haiku 3.5', 200000),
    ],
  },
  {
    id: 'google',
    name: 'Google Gemini',
    api: 'google',
    baseUrl: 'https://generativelanguage.googleapis.com/v1beta',
    env: ['GOOGLE_GENERATIVE_AI_API_KEY', 'GEMINI_API_KEY'],
    doc: 'https://ai.google.dev/gemini-api/docs/models',
    requiresApiKey: true,
    models: [
      m('gemini-2.5-pro', 'Gemini 2.5 Pro', 1048576, { reasoning: true }),
      m('gemini-2.5-flash', 'Gemini 2.5 Flash', 1048576, { reasoning: true }),
      m('gemini-2.0-flash', 'Gemini 2.0 Flash', 1048576),
    ],
  },
  {
    id: 'mistral',
    name: 'Mistral',
    api: 'mistral',
    baseUrl: 'https://api.mistral.ai/v1',
    env: ['MISTRAL_API_KEY'],
    doc: 'https://docs.mistral.ai/getting-started/models/',
    requiresApiKey: true,
    models: [
      m('mistral-large-latest', 'Mistral Large', 131072),
      m('mistral-small-latest', 'Mistral Small', 131072),
      m('codestral-latest', 'Codestral', 256000),
    ],
  },
  {
    id: 'xai',
    name: 'xAI',
    api: 'openai-compatible',
    baseUrl: 'https://api.x.ai/v1',
    env: ['XAI_API_KEY'],
    doc: 'https://docs.x.ai/docs/models',
    requiresApiKey: true,
    models: [
      m('grok-4', 'Grok 4', 256000, { reasoning: true }),
      m('grok-3-mini', 'Grok 3 Mini', 131072, { reasoning: true }),
    ],
  },
  {
    id: 'deepseek',
    name: 'DeepSeek',
    api: 'openai-compatible',
    baseUrl: 'https://api.deepseek.com/v1',
    env: ['DEEPSEEK_API_KEY'],
    doc: 'https://api-docs.deepseek.com/quick_start/pricing',
    requiresApiKey: true,
    models: [
      m('deepseek-chat', 'DeepSeek V3 (chat)', 128000),
      m('deepseek-reasoner', 'DeepSeek R1 (reasoner)', 128000, { reasoning: true }),
    ],
  },
  {
    id: 'groq',
    name: 'Groq',
    api: 'openai-compatible',
    baseUrl: 'https://api.groq.com/openai/v1',
    env: ['GROQ_API_KEY'],
    doc: 'https://console.groq.com/docs/models',
    requiresApiKey: true,
    models: [
      m('llama-3.3-70b-versatile', 'Llama 3.3 70B Versatile', 131072),
      m('moonshotai/kimi-k2-instruct', 'Kimi K2 Instruct', 131072),
      m('openai/gpt-oss-120b', 'GPT OSS 120B', 131072, { reasoning: true }),
    ],
  },
  {
    id: 'cerebras',
    name: 'Cerebras',
    api: 'openai-compatible',
    baseUrl: 'https://api.cerebras.ai/v1',
    env: ['CEREBRAS_API_KEY'],
    doc: 'https://inference-docs.cerebras.ai/models/overview',
    requiresApiKey: true,
    models: [
      m('qwen-3-coder-480b', 'Qwen 3 Coder 480B', 131072),
      m('gpt-oss-120b', 'GPT OSS 120B', 131072, { reasoning: true }),
    ],
  },
  {
    id: 'together',
    name: 'Together AI',
    api: 'openai-compatible',
    baseUrl: 'https://api.together.xyz/v1',
    env: ['TOGETHER_API_KEY'],
    doc: 'https://docs.together.ai/docs/serverless-models',
    requiresApiKey: true,
    models: [
      m('meta-llama/Llama-3.3-70B-Instruct-Turbo', 'Llama 3.3 70B Instruct Turbo', 131072),
      m('Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8', 'Qwen3 Coder 480B', 262144),
      m('deepseek-ai/DeepSeek-V3', 'DeepSeek V3', 131072),
    ],
  },
  {
    id: 'fireworks',
    name: 'Fireworks AI',
    api: 'openai-compatible',
    baseUrl: 'https://api.fireworks.ai/inference/v1',
    env: ['FIREWORKS_API_KEY'],
    doc: 'https://fireworks.ai/models',
    requiresApiKey: true,
    models: [
      m('accounts/fireworks/models/kimi-k2-instruct', 'Kimi K2 Instruct', 131072),
      m('accounts/fireworks/models/qwen3-coder-480b-a35b-instruct', 'Qwen3 Coder 480B', 262144),
    ],
  },
  {
    id: 'openrouter',
    name: 'OpenRouter',
    api: 'openai-compatible',
    baseUrl: 'https://openrouter.ai/api/v1',
    env: ['OPENROUTER_API_KEY'],
    doc: 'https://openrouter.ai/models',
    requiresApiKey: true,
    models: [
      m('anthropic/claude-sonnet-4.5', 'Claude Sonnet 4.5', 200000, { reasoning: true }),
      m('openai/gpt-5', 'GPT-5', 400000, { reasoning: true }),
      m('google/gemini-2.5-pro', 'Gemini 2.5 Pro', 1048576, { reasoning: true }),
    ],
  },
  {
    id: 'perplexity',
    name: 'Perplexity',
    api: 'openai-compatible',
    baseUrl: 'https://api.perplexity.ai',
    env: ['PERPLEXITY_API_KEY'],
    doc: 'https://docs.perplexity.ai/getting-started/models',
    requiresApiKey: true,
    models: [
      m('sonar', 'Sonar', 128000, { toolCall: false }),
      m('sonar-pro', 'Sonar Pro', 200000, { toolCall: false }),
    ],
  },
  {
    id: 'amazon-bedrock',
    name: 'Amazon Bedrock',
    api: 'bedrock',
    baseUrl: null,
    env: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'],
    doc: 'https://docs.aws.amazon.com/bedrock/latest/userguide/models-supported.html',
    requiresApiKey: true,
    models: [
      m('anthropic.claude-sonnet-4-5-20250929-v1:0', 'Claude Sonnet 4.5', 200000, { reasoning: true }),
      m('amazon.nova-pro-v1:0', 'Nova Pro', 300000),
      m('meta.llama3-3-70b-instruct-v1:0', 'Llama 3.3 70B Instruct', 128000),
    ],
  },
  {
    id: 'azure-openai',
    name: 'Azure OpenAI',
    api: 'azure-openai',
    baseUrl: null,
    env: ['AZURE_API_KEY', 'AZURE_RESOURCE_NAME'],
    doc: 'https://learn.microsoft.com/azure/ai-services/openai/concepts/models',
    requiresApiKey: true,
    models: [
      m('gpt-4.1', 'GPT-4.1 (deployment)', 1047576),
      m('gpt-4o', 'GPT-4o (deployment)', 128000),
      m('o4-mini', 'o4-mini (deployment)', 200000, { reasoning: true }),
    ],
  },
  {
    id: 'ollama',
    name: 'Ollama (local)',
    api: 'openai-compatible',
    baseUrl: 'http://127.0.0.1:11434/v1',
    env: [],
    doc: 'https://ollama.com/library',
    requiresApiKey: false,
    models: [
      m('llama3.2', 'Llama 3.2', 131072),
      m('qwen2.5-coder', 'Qwen 2.5 Coder', 32768),
      m('gpt-oss:20b', 'GPT OSS 20B', 131072, { reasoning: true }),
    ],
  },
]
