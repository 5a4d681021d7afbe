import type { FastifyInstance } from 'fastify';
import {
  CreateCredentialRequest,
  CreateVaultRequest,
  UpdateCredentialRequest,
  UpdateVaultRequest,
  VaultListQuery,
  type CredentialAuth,
  type CredentialAuthCreate,
  type CredentialAuthRotate,
} from '../../../schemas/agents.ts';
import { ApiError } from '../../platform/api-error.ts';
import { newSortableId } from '../../platform/ids.ts';
import { parseOrThrow } from '../../platform/request-validation.ts';
import type { RecordStore } from '../../platform/stores/record-store.ts';
import { cursorPage } from '../http/list-page.ts';
import { matchesMetadata, metadataFilters } from './metadata-filters.ts';

// Vaults and their credentials round-trip (a client's set-up code runs against them); nothing
// in a session uses them here: no MCP server or environment runs in an emulated session. What
// a credential holds secret (a token, an access or refresh token, a secret value, a client
// secret) is never stored nor returned: the credential keeps its other fields.

/** A list's query, checked, and its metadata filters. */
function listQueryOf(raw: unknown) {
  const { filters, rest } = metadataFilters((raw ?? {}) as Record<string, unknown>);
  return { query: parseOrThrow(VaultListQuery, rest), filters };
}

/** What a credential keeps of its `auth`: everything but the secret. */
function storedAuth(auth: CredentialAuthCreate): CredentialAuth {
  switch (auth.type) {
    case 'mcp_oauth': {
      const { refresh } = auth;
      return {
        type: auth.type,
        mcp_server_url: auth.mcp_server_url,
        expires_at: auth.expires_at ?? null,
        refresh: refresh
          ? {
              client_id: refresh.client_id,
              resource: refresh.resource ?? null,
              scope: refresh.scope ?? null,
              token_endpoint: refresh.token_endpoint,
              token_endpoint_auth: { type: refresh.token_endpoint_auth.type },
            }
          : null,
      };
    }
    case 'static_bearer':
      return { type: auth.type, mcp_server_url: auth.mcp_server_url };
    case 'environment_variable':
      return { type: auth.type, secret_name: auth.secret_name, networking: auth.networking };
  }
}

/** A credential's `auth` after a rotation: a new secret (not kept), and for OAuth what else it changes. */
function rotatedAuth(auth: CredentialAuth, rotation: CredentialAuthRotate): CredentialAuth {
  if (auth.type !== 'mcp_oauth' || rotation.type !== 'mcp_oauth') return auth;
  let { refresh } = auth;
  if (rotation.refresh === null) refresh = null;
  else if (rotation.refresh) {
    // A rotation changes refresh settings; it cannot make them (no client_id, no token_endpoint).
    if (!refresh)
      throw new ApiError(
        'invalid_value',
        "Invalid parameter 'auth.refresh': this credential has no refresh settings to rotate; create a credential with them.",
        'auth.refresh',
      );
    const { scope, token_endpoint_auth: endpointAuth } = rotation.refresh;
    refresh = { ...refresh, ...(scope !== undefined ? { scope } : {}), ...(endpointAuth ? { token_endpoint_auth: { type: endpointAuth.type } } : {}) };
  }
  return { ...auth, ...(rotation.expires_at !== undefined ? { expires_at: rotation.expires_at } : {}), refresh };
}

interface Vault {
  id: string;
  object: 'vault';
  name: string | null;
  metadata: Record<string, string>;
  created_at: number;
}

interface Credential {
  id: string;
  object: 'vault.credential';
  vault_id: string;
  name: string;
  metadata: Record<string, string>;
  created_at: number;
  updated_at: number;
  auth: CredentialAuth;
}

type VaultParams = { Params: { vault_id: string } };
type CredentialParams = { Params: { vault_id: string; credential_id: string } };

/** Vaults and their credentials (`client.beta.agents.vaults`). */
export function registerVaultRoutes(app: FastifyInstance, records: RecordStore): void {
  const vaultOf = async (id: string): Promise<Vault> => {
    const vault = await records.get<Vault>('vault', id);
    if (!vault) throw new ApiError('vault_not_found', `Vault with id '${id}' not found.`, 'vault_id');
    return vault;
  };
  const credentialOf = async (vaultId: string, id: string): Promise<Credential> => {
    await vaultOf(vaultId);
    const credential = await records.get<Credential>('credential', id);
    if (!credential || credential.vault_id !== vaultId)
      throw new ApiError('vault_not_found', `Credential with id '${id}' not found in vault '${vaultId}'.`, 'credential_id');
    return credential;
  };

  app.post('/v1/vaults', async (request): Promise<Vault> => {
    const body = parseOrThrow(CreateVaultRequest, request.body ?? {});
    const vault: Vault = {
      id: newSortableId('vault'),
      object: 'vault',
      name: body.name ?? null,
      metadata: body.metadata ?? {},
      created_at: Math.floor(Date.now() / 1000),
    };
    await records.put('vault', vault.id, vault);
    return vault;
  });
  app.get('/v1/vaults', async (request) => {
    const { query, filters } = listQueryOf(request.query);
    return cursorPage(
      (await records.list<Vault>('vault')).filter((vault) => matchesMetadata(vault.metadata, filters)),
      query,
      'vault',
      true,
    );
  });
  app.get<VaultParams>('/v1/vaults/:vault_id', async (request) => vaultOf(request.params.vault_id));
  app.post<VaultParams>('/v1/vaults/:vault_id', async (request): Promise<Vault> => {
    const body = parseOrThrow(UpdateVaultRequest, request.body ?? {});
    const vault = await vaultOf(request.params.vault_id);
    const updated: Vault = {
      ...vault,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
    };
    await records.put('vault', vault.id, updated);
    return updated;
  });
  app.delete<VaultParams>('/v1/vaults/:vault_id', async (request) => {
    const id = request.params.vault_id;
    await vaultOf(id);
    await records.deleteChildren('credential', id);
    await records.delete('vault', id);
    return { id, deleted: true, object: 'vault.deleted' as const };
  });

  app.post<VaultParams>('/v1/vaults/:vault_id/credentials', async (request): Promise<Credential> => {
    const body = parseOrThrow(CreateCredentialRequest, request.body ?? {});
    const vault = await vaultOf(request.params.vault_id);
    const now = Math.floor(Date.now() / 1000);
    const credential: Credential = {
      id: newSortableId('cred'),
      object: 'vault.credential',
      vault_id: vault.id,
      name: body.name,
      metadata: body.metadata ?? {},
      created_at: now,
      updated_at: now,
      auth: storedAuth(body.auth),
    };
    await records.put('credential', credential.id, credential, vault.id);
    return credential;
  });
  app.get<VaultParams>('/v1/vaults/:vault_id/credentials', async (request) => {
    const { query, filters } = listQueryOf(request.query);
    await vaultOf(request.params.vault_id);
    const credentials = (await records.list<Credential>('credential', request.params.vault_id)).filter((credential) =>
      matchesMetadata(credential.metadata, filters),
    );
    return cursorPage(credentials, query, 'credential of this vault', true);
  });
  app.get<CredentialParams>('/v1/vaults/:vault_id/credentials/:credential_id', async (request) =>
    credentialOf(request.params.vault_id, request.params.credential_id),
  );
  app.post<CredentialParams>('/v1/vaults/:vault_id/credentials/:credential_id', async (request): Promise<Credential> => {
    const body = parseOrThrow(UpdateCredentialRequest, request.body ?? {});
    const credential = await credentialOf(request.params.vault_id, request.params.credential_id);
    if (body.auth && body.auth.type !== credential.auth.type) {
      throw new ApiError(
        'invalid_value',
        `Invalid value for 'auth.type': a credential's auth is rotated within its type ('${credential.auth.type}'), not changed to '${body.auth.type}'.`,
        'auth.type',
      );
    }
    const updated: Credential = {
      ...credential,
      ...(body.auth ? { auth: rotatedAuth(credential.auth, body.auth) } : {}),
      ...(body.metadata !== undefined ? { metadata: body.metadata ?? {} } : {}),
      updated_at: Math.floor(Date.now() / 1000),
    };
    await records.put('credential', credential.id, updated, credential.vault_id);
    return updated;
  });
  app.delete<CredentialParams>('/v1/vaults/:vault_id/credentials/:credential_id', async (request) => {
    const credential = await credentialOf(request.params.vault_id, request.params.credential_id);
    await records.delete('credential', credential.id, credential.vault_id);
    return { id: credential.id, deleted: true, object: 'vault.credential.deleted' as const };
  });
}
