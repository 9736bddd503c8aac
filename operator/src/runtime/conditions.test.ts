import { describe, expect, it } from 'vitest';
import { setCondition } from './conditions.js';

describe('setCondition', () => {
  it('adds a condition with the generation it was computed from', () => {
    const list = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Creating', message: 'm' }, 3, 't1');
    expect(list).toEqual([{ type: 'Ready', status: 'False', reason: 'Creating', message: 'm', lastTransitionTime: 't1', observedGeneration: 3 }]);
  });

  it('keeps lastTransitionTime while the status stays, and moves it when the status changes', () => {
    let list = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Creating', message: 'a' }, 1, 't1');
    list = setCondition(list, { type: 'Ready', status: 'False', reason: 'WaitingForPods', message: 'b' }, 2, 't2');
    expect(list[0]).toMatchObject({ reason: 'WaitingForPods', lastTransitionTime: 't1', observedGeneration: 2 });
    list = setCondition(list, { type: 'Ready', status: 'True', reason: 'ClusterReady', message: 'c' }, 2, 't3');
    expect(list[0]).toMatchObject({ status: 'True', lastTransitionTime: 't3' });
  });

  it('keeps one condition per type, in place', () => {
    let list = setCondition(undefined, { type: 'Ready', status: 'True', reason: 'R', message: '' }, 1, 't');
    list = setCondition(list, { type: 'Degraded', status: 'False', reason: 'D', message: '' }, 1, 't');
    list = setCondition(list, { type: 'Ready', status: 'False', reason: 'R2', message: '' }, 1, 't');
    expect(list.map((condition) => `${condition.type}=${condition.status}`)).toEqual(['Ready=False', 'Degraded=False']);
  });
});
