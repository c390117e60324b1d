import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client.ts';
import { ActionForm } from '../../ui/ActionForm.tsx';
import { Field } from '../../ui/Field.tsx';
import { fieldErrors } from '../../ui/field-errors.ts';
import { SelectField } from '../../ui/SelectField.tsx';
import { CreateFormFooter } from './CreateFormFooter.tsx';
import { NameField } from './NameField.tsx';
import type { ChannelKind, CreatedChannel, NewChannel } from './types.ts';

/** What each kind of channel is sent to: the one body field it takes, and how it is asked for. */
export const KINDS: Record<
  ChannelKind,
  { title: string; field: 'addresses' | 'url' | 'phone'; label: string; type: string; hint: string }
> = {
  email: {
    title: 'E-mail',
    field: 'addresses',
    label: 'E-mail addresses',
    type: 'text',
    hint: 'One to twenty, separated by commas.',
  },
  chat: {
    title: 'Chat (Slack or Mattermost)',
    field: 'url',
    label: 'Incoming-webhook URL',
    type: 'url',
    hint: 'The URL the chat product gave for its incoming webhook. It is a credential: shown shortened afterwards.',
  },
  webhook: {
    title: 'Webhook (Standard Webhooks)',
    field: 'url',
    label: 'Webhook URL',
    type: 'url',
    hint: 'Deliveries are signed; the signing secret is shown once, after creation.',
  },
  voice: {
    title: 'Voice call',
    field: 'phone',
    label: 'Phone number',
    type: 'tel',
    hint: 'E.164, such as +15551234567. Needs the voice provider configured.',
  },
};

/** The one target field of the kind, as the API takes it: nothing else is sent. */
function target(kind: ChannelKind, text: string): Pick<NewChannel, 'addresses' | 'url' | 'phone'> {
  const field = KINDS[kind].field;
  if (field === 'addresses')
    return {
      addresses: text
        .split(/[\s,;]+/)
        .map((a) => a.trim())
        .filter(Boolean),
    };
  return { [field]: text.trim() };
}

/** A new channel of the client; a webhook's answer carries its secret, handed to `onCreated` to show once. */
export function ChannelForm({ clientId, onCreated }: { clientId: string; onCreated: (c: CreatedChannel) => void }) {
  const qc = useQueryClient();
  const [kind, setKind] = useState<ChannelKind>('email');
  const [name, setName] = useState('');
  const [text, setText] = useState('');
  const [enabled, setEnabled] = useState(true);
  const create = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/api/v1/notification-channels', {
          body: { client_id: clientId, kind, name, enabled, ...target(kind, text) },
        }),
      ),
    onSuccess: async (answer) => {
      onCreated(answer.data);
      setName('');
      setText('');
      await qc.invalidateQueries({ queryKey: ['notification-channels', clientId] });
    },
  });
  const spec = KINDS[kind];
  const errors = fieldErrors(create.error, ['kind', 'name', spec.field]);
  return (
    <ActionForm className="card inline" aria-label="New channel" onAction={() => create.mutate()}>
      <h3>New channel</h3>
      <div className="row">
        <SelectField
          label="Kind"
          name="kind"
          value={kind}
          onChange={(e) => {
            setKind(e.target.value as ChannelKind);
            setText('');
          }}
          error={errors.of('kind')}
        >
          {(Object.keys(KINDS) as ChannelKind[]).map((k) => (
            <option key={k} value={k}>
              {KINDS[k].title}
            </option>
          ))}
        </SelectField>
        <NameField label="Channel name" name="channel-name" value={name} onChange={setName} error={errors.of('name')} />
      </div>
      <Field
        key={kind}
        label={spec.label}
        name={spec.field}
        type={spec.type}
        required
        value={text}
        onChange={(e) => setText(e.target.value)}
        hint={spec.hint}
        error={errors.joined(spec.field)}
      />
      <CreateFormFooter
        enabled={{ value: enabled, onChange: setEnabled }}
        error={errors.rest}
        pending={create.isPending}
        submit="Create the channel"
      />
    </ActionForm>
  );
}
