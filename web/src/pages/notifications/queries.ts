import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client.ts';

/** The most a list route answers per page (docs/api/conventions.md). */
export const MAX_PER_PAGE = 100;

/** A client's channels: listed on their tab and offered to the rules' steps (one cache for both). */
export function useChannels(clientId: string) {
  return useQuery({
    queryKey: ['notification-channels', clientId],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/notification-channels', {
          params: { query: { client_id: clientId, per_page: MAX_PER_PAGE } },
        }),
      ),
  });
}

/** A client's environments, the scopes a rule or window may narrow to (the overview's query, shared cache). */
export function useEnvironments(clientId: string) {
  return useQuery({
    queryKey: ['environments', clientId],
    queryFn: () => unwrap(api.GET('/api/v1/clients/{id}/environments', { params: { path: { id: clientId } } })),
  });
}

/** Rows per page of a delivery log: the query and the log's pager must agree on it. */
export const DELIVERIES_PER_PAGE = 20;

/** A delivery log page of a channel; polled while one of its deliveries is still being sent. */
export function useDeliveries(channelId: string, page: number) {
  return useQuery({
    queryKey: ['notification-deliveries', channelId, page],
    queryFn: () =>
      unwrap(
        api.GET('/api/v1/notification-channels/{id}/deliveries', {
          params: { path: { id: channelId }, query: { page, per_page: DELIVERIES_PER_PAGE } },
        }),
      ),
    refetchInterval: (q) => (q.state.data?.data.some((d) => d.status === 'pending') ? 1500 : false),
  });
}

/** Whole minutes etc. typed into a number input, sent as a number (an empty input: the API's default). */
export const numberOrUndefined = (text: string): number | undefined => (text.trim() === '' ? undefined : Number(text));
