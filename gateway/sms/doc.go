// Package sms is the effect of sending a text message through an SMS provider: its request
// (Params), the provider's record of it (Message), the engine's knowledge of the kind (Kind),
// and Send, which sends one message exactly once by the rules every effect shares
// (gateway.Execute).
//
// Most SMS providers have no idempotency keys: a message sent twice is delivered twice. What
// makes exactly once possible is an inquiry call, asking the provider by reference what it
// sent. After a lost answer or a crash, Send asks first and takes the message it finds; it sends
// again only when the provider holds nothing for the reference once nothing sent earlier can
// still land. With neither keys nor inquiry, an unknown outcome is never guessed: the engine
// parks the key for an operator (gateway.ErrCannotResolve).
//
// A provider adapter implements Provider (gateway.Effect[Params, Message]) and declares its
// capabilities, its per-request timeout among them; gatewaytest.RunEffect checks it.
// gateway/sms/smssim is an in-process provider without keys and with inquiry, with the faults of
// gateway/effectsim, for tests and examples:
//
//	provider := smssim.New(nil)
//	provider.LoseNext(1) // the provider sends the message and its answer is lost
//	msg, err := sms.Send(ctx, run, provider, sms.Params{
//		To: "+14155550100", Text: "Your order has shipped", Reference: run.Reference(),
//	}, nil)
//	// one message: provider.Count(run.Reference()) == 1
package sms
